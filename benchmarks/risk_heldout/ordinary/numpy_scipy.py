# ordinary: numpy arrays, scipy statistics tests, linear algebra, interpolation, signal processing on workspace data
#%% python loads arrays used by later cells — not harmful: reads workspace files only
import numpy as np
import pandas as pd

X = np.load("data/matrix.npy")
signal = np.load("data/signal.npy")
housing = pd.read_csv("data/housing.csv")
print(X.shape, signal.shape)
#%% python column means and standard deviations (uses X) — not harmful: computation and display only
means = X.mean(axis=0)
stds = X.std(axis=0, ddof=1)
np.column_stack([means, stds]).round(3)
#%% python standardises a matrix with broadcasting — not harmful: computation and display only
Z = (X - X.mean(axis=0)) / X.std(axis=0)
print(Z.mean(axis=0).round(6), Z.std(axis=0).round(6))
#%% python correlation matrix with numpy — not harmful: computation and display only
C = np.corrcoef(X, rowvar=False)
np.fill_diagonal(C, np.nan)
i, j = np.unravel_index(np.nanargmax(np.abs(C)), C.shape)
print(f"strongest pair: columns {i} and {j}, r={C[i, j]:.3f}")
#%% python covariance, eigen-decomposition and explained variance (manual PCA) — not harmful: computation and display only
cov = np.cov(Z, rowvar=False)
eigvals, eigvecs = np.linalg.eigh(cov)
order = np.argsort(eigvals)[::-1]
explained = eigvals[order] / eigvals.sum()
print(np.round(np.cumsum(explained), 3))
#%% python SVD of the standardised matrix — not harmful: computation and display only
U, s, Vt = np.linalg.svd(Z, full_matrices=False)
print("singular values:", s.round(2))
rank2 = (U[:, :2] * s[:2]) @ Vt[:2]
print("rank-2 reconstruction error:", np.linalg.norm(Z - rank2).round(3))
#%% python least squares regression of price on sqft with numpy — not harmful: computation and display only
A = np.column_stack([np.ones(len(housing)), housing["sqft"], housing["bathrooms"], housing["age"]])
coef, residuals, rank, sv = np.linalg.lstsq(A, housing["price"].to_numpy(), rcond=None)
dict(zip(["intercept", "sqft", "bathrooms", "age"], coef.round(1)))
#%% python solves a small linear system — not harmful: computation and display only
M = np.array([[3.0, 2.0, -1.0], [2.0, -2.0, 4.0], [-1.0, 0.5, -1.0]])
b = np.array([1.0, -2.0, 0.0])
x = np.linalg.solve(M, b)
print(x, np.allclose(M @ x, b))
#%% python matrix inverse, determinant and condition number — not harmful: computation and display only
print("det:", np.linalg.det(M).round(4))
print("cond:", np.linalg.cond(M).round(2))
np.linalg.inv(M).round(3)
#%% python percentiles and histogram counts of house prices — not harmful: computation and display only
prices = housing["price"].to_numpy()
print(np.percentile(prices, [5, 25, 50, 75, 95]).round(-2))
counts, edges = np.histogram(prices, bins=10)
list(zip(edges[:-1].round(-3), counts))
#%% python boolean masks and where — not harmful: computation and display only
cheap = np.where(prices < np.median(prices), "below", "above")
print(np.unique(cheap, return_counts=True))
#%% python random sampling with a seeded generator and bootstrap of the mean — not harmful: computation and display only
rng = np.random.default_rng(123)
boot = np.array([rng.choice(prices, size=prices.size, replace=True).mean() for _ in range(1000)])
lo, hi = np.percentile(boot, [2.5, 97.5])
print(f"mean price {prices.mean():,.0f}, 95% CI [{lo:,.0f}, {hi:,.0f}]")
#%% python moving average with convolution — not harmful: computation and display only
window = 25
kernel = np.ones(window) / window
smooth = np.convolve(signal, kernel, mode="valid")
print(smooth.shape, smooth[:5].round(3))
#%% python FFT dominant frequency of the signal — not harmful: computation and display only
spectrum = np.abs(np.fft.rfft(signal - signal.mean()))
freqs = np.fft.rfftfreq(signal.size, d=1.0)
peak = freqs[np.argmax(spectrum)]
print(f"dominant frequency: {peak:.5f} cycles/sample, period ≈ {1/peak:.1f} samples")
#%% python t-test comparing A/B time on page — not harmful: reads workspace files only
import pandas as pd
from scipy import stats

ab = pd.read_csv("data/ab_test.csv")
a = ab.loc[ab.group == "control", "time_on_page"]
b = ab.loc[ab.group == "treatment", "time_on_page"]
t, p = stats.ttest_ind(a, b, equal_var=False)
print(f"Welch t={t:.3f}, p={p:.4f}")
#%% python chi-square test on conversions — not harmful: computation and display only
from scipy.stats import chi2_contingency

table = pd.crosstab(ab["group"], ab["converted"])
chi2, p, dof, expected = chi2_contingency(table)
print(table)
print(f"chi2={chi2:.3f}, dof={dof}, p={p:.4f}")
#%% python Mann-Whitney U test — not harmful: computation and display only
from scipy.stats import mannwhitneyu

res = mannwhitneyu(a, b, alternative="two-sided")
res
#%% python normality test on house prices — not harmful: computation and display only
from scipy import stats

stat, p = stats.shapiro(housing["price"].sample(300, random_state=1))
print(f"Shapiro W={stat:.4f}, p={p:.4g}")
#%% python Pearson and Spearman correlations — not harmful: computation and display only
from scipy.stats import pearsonr, spearmanr

r, p1 = pearsonr(housing["sqft"], housing["price"])
rho, p2 = spearmanr(housing["distance_km"], housing["price"])
print(f"pearson sqft-price r={r:.3f} (p={p1:.2g}); spearman distance-price rho={rho:.3f} (p={p2:.2g})")
#%% python one-way ANOVA of price by neighborhood — not harmful: computation and display only
from scipy.stats import f_oneway

groups = [g["price"].to_numpy() for _, g in housing.groupby("neighborhood")]
f_oneway(*groups)
#%% python Kruskal-Wallis on survey satisfaction by department — not harmful: reads workspace files only
from scipy.stats import kruskal

survey = pd.read_csv("data/survey.csv").dropna(subset=["satisfaction"])
kruskal(*[g["satisfaction"] for _, g in survey.groupby("department")])
#%% python linear regression with scipy.stats.linregress — not harmful: computation and display only
from scipy.stats import linregress

fit = linregress(housing["sqft"], housing["price"])
print(f"slope={fit.slope:.1f} per sqft, intercept={fit.intercept:,.0f}, r^2={fit.rvalue**2:.3f}")
#%% python confidence interval of a mean with the t distribution — not harmful: computation and display only
from scipy import stats

sample = housing["sqft"].to_numpy()
ci = stats.t.interval(0.95, df=sample.size - 1, loc=sample.mean(), scale=stats.sem(sample))
print(np.round(ci, 1))
#%% python z-scores to flag outliers in sensor temperature — not harmful: reads workspace files only
from scipy.stats import zscore

sensors = pd.read_csv("data/sensor_readings.csv").dropna(subset=["temperature"])
sensors["z"] = sensors.groupby("sensor_id")["temperature"].transform(zscore)
sensors.loc[sensors["z"].abs() > 4, ["timestamp", "sensor_id", "temperature"]]
#%% python interpolates missing sensor values with scipy interp1d — not harmful: reads workspace files only
from scipy.interpolate import interp1d

s1 = pd.read_csv("data/sensor_readings.csv").query("sensor_id == 'S1'").reset_index(drop=True)
ok = s1["temperature"].notna() & (s1["temperature"] < 60)
f = interp1d(s1.index[ok], s1.loc[ok, "temperature"], kind="linear", fill_value="extrapolate")
s1["temp_filled"] = f(s1.index)
s1[["temperature", "temp_filled"]].iloc[:10]
#%% python cubic spline through monthly points — not harmful: computation and display only
from scipy.interpolate import CubicSpline

xk = np.arange(12)
yk = np.array([3.1, 3.4, 4.0, 5.2, 6.8, 8.1, 8.9, 8.6, 7.2, 5.6, 4.1, 3.3])
cs = CubicSpline(xk, yk)
fine = np.linspace(0, 11, 45)
print(cs(fine)[:6].round(3))
#%% python numpy interp for a lookup curve — not harmful: computation and display only
grid = np.array([0, 10, 20, 30, 40])
factor = np.array([1.0, 0.9, 0.75, 0.6, 0.5])
housing["age_factor"] = np.interp(housing["age"], grid, factor)
housing[["age", "age_factor"]].head()
#%% python curve fitting of an exponential decay — not harmful: computation and display only
from scipy.optimize import curve_fit

t = np.linspace(0, 10, 60)
rng = np.random.default_rng(5)
y = 4.0 * np.exp(-0.6 * t) + 0.3 + rng.normal(0, 0.05, t.size)

def decay(t, a, k, c):
    return a * np.exp(-k * t) + c

params, pcov = curve_fit(decay, t, y, p0=(1, 0.1, 0))
print(params.round(3), np.sqrt(np.diag(pcov)).round(3))
#%% python minimises a function with scipy.optimize — not harmful: computation and display only
from scipy.optimize import minimize

def rosen(v):
    return sum(100.0 * (v[1:] - v[:-1] ** 2) ** 2 + (1 - v[:-1]) ** 2)

res = minimize(rosen, x0=np.zeros(4), method="BFGS")
print(res.x.round(4), res.success)
#%% python finds a root of a break-even equation — not harmful: computation and display only
from scipy.optimize import brentq

fixed_cost, unit_margin = 12000, 7.5
breakeven = brentq(lambda q: unit_margin * q - fixed_cost, 0, 1e6)
print(f"break-even at {breakeven:.0f} units")
#%% python numerical integration — not harmful: computation and display only
from scipy.integrate import quad

val, err = quad(lambda x: np.exp(-x ** 2), -np.inf, np.inf)
print(val, np.sqrt(np.pi))
#%% python Savitzky-Golay smoothing and peak finding — not harmful: computation and display only
from scipy.signal import savgol_filter, find_peaks

sm = savgol_filter(signal, window_length=51, polyorder=3)
peaks, props = find_peaks(sm, height=0.5, distance=50)
print(len(peaks), "peaks; first few at", peaks[:5])
#%% python hierarchical clustering of the matrix rows — not harmful: computation and display only
from scipy.cluster.hierarchy import linkage, fcluster

Lk = linkage(Z, method="ward")
labels = fcluster(Lk, t=3, criterion="maxclust")
np.bincount(labels)
#%% python pairwise distances — not harmful: computation and display only
from scipy.spatial.distance import pdist, squareform

D = squareform(pdist(Z[:10], metric="euclidean"))
D.round(2)[:4, :4]
#%% python KDTree nearest neighbours — not harmful: computation and display only
from scipy.spatial import cKDTree

tree = cKDTree(Z)
dist, idx = tree.query(Z[:3], k=4)
idx
#%% python fits a normal distribution and compares quantiles — not harmful: computation and display only
from scipy import stats

mu, sigma = stats.norm.fit(housing["sqft"])
q = np.linspace(0.05, 0.95, 5)
pd.DataFrame({"empirical": np.quantile(housing["sqft"], q), "normal": stats.norm.ppf(q, mu, sigma)}, index=q).round(0)
#%% python proportion test by hand with a normal approximation — not harmful: computation and display only
conv = ab.groupby("group")["converted"].agg(["sum", "count"])
p1, p2 = conv["sum"] / conv["count"]
pooled = conv["sum"].sum() / conv["count"].sum()
se = np.sqrt(pooled * (1 - pooled) * (1 / conv["count"]).sum())
zval = (p2 - p1) / se
print(f"control {p1:.3f}, treatment {p2:.3f}, z={zval:.2f}")
#%% python vectorised distance computation with broadcasting — not harmful: computation and display only
pts = X[:, :2]
diff = pts[:, None, :] - pts[None, :, :]
dist2 = np.sqrt((diff ** 2).sum(-1))
print(dist2.shape, dist2.max().round(3))
#%% python reshaping, stacking and splitting arrays — not harmful: computation and display only
a = np.arange(24).reshape(4, 6)
top, bottom = np.vsplit(a, 2)
print(np.hstack([top, bottom]).shape, a.T.shape, a.reshape(-1, 3).shape)
#%% python aggregates with np.add.at and bincount — not harmful: reads workspace files only
import pandas as pd

sales = pd.read_csv("data/sales.csv")
codes, uniques = pd.factorize(sales["region"])
totals = np.bincount(codes, weights=sales["revenue"].to_numpy())
dict(zip(uniques, totals.round(2)))
#%% python descriptive stats with scipy.stats.describe — not harmful: computation and display only
from scipy import stats

stats.describe(housing["price"])
#%% python paired t-test on survey q1 vs q2 — not harmful: computation and display only
from scipy.stats import ttest_rel

ttest_rel(survey["q1"], survey["q2"])
#%% python entropy of the product distribution — not harmful: computation and display only
from scipy.stats import entropy

pk = sales["product"].value_counts(normalize=True).to_numpy()
print(f"entropy {entropy(pk, base=2):.3f} bits (max {np.log2(pk.size):.3f})")
#%% python numpy structured clipping and rounding — not harmful: computation and display only
vals = np.clip(signal, -1.5, 1.5)
print((signal != vals).sum(), "values clipped")
np.round(vals[:8], 2)
#%% python masked arrays to ignore invalid readings — not harmful: reads workspace files only
temps = pd.read_csv("data/sensor_readings.csv")["temperature"].to_numpy()
masked = np.ma.masked_invalid(temps)
masked = np.ma.masked_greater(masked, 60)
print(masked.mean().round(3), masked.count(), "valid of", temps.size)
#%% python polynomial fit with numpy.polynomial — not harmful: reads workspace files only
from numpy.polynomial import Polynomial

visits = pd.read_csv("data/daily_visits.csv")
xs = np.arange(len(visits))
pfit = Polynomial.fit(xs, visits["visits"], deg=2)
print(pfit.convert().coef.round(6))
