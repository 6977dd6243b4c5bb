# numpy / scipy: arrays, statistics, linear algebra, simulations.
#%%
import numpy as np
rng = np.random.default_rng(42)
x = rng.normal(size=1000)
x.mean(), x.std()
#%%
a = np.arange(12).reshape(3, 4)
a.T @ a
#%%
arr = np.loadtxt("data/measurements.txt", delimiter=",", skiprows=1)
arr.shape
#%%
data = np.genfromtxt("data/sensor.csv", delimiter=",", names=True, dtype=None, encoding="utf-8")
#%%
np.save("cache/features.npy", features)
#%%
features = np.load("cache/features.npy")
#%%
np.savez_compressed("cache/arrays.npz", X=X, y=y)
with np.load("cache/arrays.npz") as npz:
    X, y = npz["X"], npz["y"]
#%%
m = np.array([[2, 1], [1, 3]])
vals, vecs = np.linalg.eig(m)
vals
#%%
sol = np.linalg.solve(A, b)
np.allclose(A @ sol, b)
#%%
z = (x - x.mean()) / x.std()
outliers = np.where(np.abs(z) > 3)[0]
len(outliers)
#%%
hist, edges = np.histogram(x, bins=30)
#%%
pct = np.percentile(values, [5, 25, 50, 75, 95])
pct
#%%
grid = np.meshgrid(np.linspace(-2, 2, 100), np.linspace(-2, 2, 100))
zz = np.exp(-(grid[0] ** 2 + grid[1] ** 2))
#%%
walk = np.cumsum(rng.choice([-1, 1], size=10_000))
walk.max(), walk.min()
#%%
from scipy import stats
t, p = stats.ttest_ind(group_a, group_b, equal_var=False)
print(f"t={t:.3f} p={p:.4f}")
#%%
from scipy import stats
r, p = stats.pearsonr(df["x"], df["y"])
#%%
from scipy.optimize import curve_fit
def model(t, a, k):
    return a * np.exp(-k * t)
params, cov = curve_fit(model, t, y, p0=(1, 0.1))
#%%
from scipy.optimize import minimize
res = minimize(lambda w: ((X @ w - y) ** 2).sum(), x0=np.zeros(X.shape[1]))
res.x
#%%
from scipy.interpolate import interp1d
f = interp1d(xs, ys, kind="cubic")
f(2.5)
#%%
from scipy.signal import savgol_filter
smooth = savgol_filter(signal, window_length=11, polyorder=3)
#%%
from scipy.spatial.distance import cdist
d = cdist(points, centers, metric="euclidean")
labels = d.argmin(axis=1)
#%%
chi2, p, dof, expected = stats.chi2_contingency(table)
#%%
boot = [rng.choice(sample, size=len(sample)).mean() for _ in range(2000)]
np.percentile(boot, [2.5, 97.5])
#%%
mask = (arr > 0) & (arr < 10)
arr[mask].sum()
#%%
cov = np.cov(X, rowvar=False)
np.round(cov, 3)
#%%
u, s, vt = np.linalg.svd(X_centered, full_matrices=False)
explained = s**2 / (s**2).sum()
#%%
np.set_printoptions(precision=3, suppress=True)
print(matrix)
#%%
idx = np.argsort(scores)[::-1][:10]
top_items = items[idx]
#%%
x = np.clip(x, 0, 1)
np.nan_to_num(x, copy=False)
#%%
ma = np.convolve(series, np.ones(7) / 7, mode="valid")
#%%
import math
angles = np.deg2rad([0, 30, 45, 60, 90])
np.round(np.sin(angles), 3), math.pi
#%%
counts = np.bincount(labels, minlength=5)
#%%
for fn in ("mean", "median", "std"):
    print(fn, getattr(np, fn)(values))
#%%
from scipy import sparse
M = sparse.csr_matrix((vals, (rows, cols)), shape=(n, n))
M.nnz
#%%
sims = rng.poisson(lam=3.2, size=(10000, 12)).sum(axis=1)
(sims > 45).mean()
#%%
np.einsum("ij,jk->ik", A, B)
