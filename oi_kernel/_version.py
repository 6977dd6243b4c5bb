"""The package version, in one place: the wheel reads it here ([tool.hatch.version]);
scripts/release-check checks the lab extension's package.json and CHANGELOG.md against it.
Modules import it from here, not from the package root, so no module imports the root."""

__version__ = "0.1.0"
