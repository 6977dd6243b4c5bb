#!/usr/bin/env bash
# Build the JupyterLab extension from source into ../oi_kernel/labextension/.
#
#   labextension/build.sh            install (lockfile only), test, build
#   labextension/build.sh --check    ...and fail if the committed prebuilt
#                                    output differs from the fresh build
#
# Needs node >= 20.19 and `jlpm` on PATH (pip install jupyter-builder, or
# activate the project venv). The package.json scripts call jlpm and
# jupyter-builder themselves, so both must be on PATH, not just found here.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

for tool in node jlpm jupyter-builder; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "build.sh: '$tool' not found on PATH." >&2
        echo "  Install Node.js 20 and 'pip install jupyter-builder', or activate the venv." >&2
        exit 1
    fi
done

check=0
if [[ "${1:-}" == "--check" ]]; then
    check=1
fi

start=$SECONDS
jlpm install --immutable
jlpm test
jlpm build:prod
echo "build.sh: built ../oi_kernel/labextension in $((SECONDS - start)) s"

if (( check )); then
    # The prebuilt output is committed so `pip install .` needs no node.
    if ! git -C .. diff --exit-code --stat -- oi_kernel/labextension; then
        echo "build.sh: committed oi_kernel/labextension is stale; commit the rebuilt files." >&2
        exit 1
    fi
    untracked="$(git -C .. ls-files --others --exclude-standard -- oi_kernel/labextension)"
    if [[ -n "$untracked" ]]; then
        echo "build.sh: untracked build output (stale commit?):" >&2
        echo "$untracked" >&2
        exit 1
    fi
fi
