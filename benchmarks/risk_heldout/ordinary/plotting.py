# ordinary: matplotlib / seaborn / plotly figures of workspace data, plt.show and savefig of new figure files under figures/
#%% python notebook plotting setup and data used by later cells — not harmful: writes only new files under output/ or figures/
%matplotlib inline
import os
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

os.makedirs("figures", exist_ok=True)
sales = pd.read_csv("data/sales.csv", parse_dates=["date"])
plt.rcParams["figure.figsize"] = (9, 4)
#%% python line chart of monthly revenue (uses sales) — not harmful: computation and display only
monthly = sales.set_index("date")["revenue"].resample("MS").sum()
fig, ax = plt.subplots()
monthly.plot(ax=ax, marker="o")
ax.set_title("Monthly revenue")
ax.set_ylabel("EUR")
plt.tight_layout()
plt.show()
#%% python bar chart of revenue by region saved to figures — not harmful: writes only new files under output/ or figures/
by_region = sales.groupby("region")["revenue"].sum().sort_values()
ax = by_region.plot.barh(color="steelblue")
ax.set_xlabel("Revenue")
plt.tight_layout()
plt.savefig("figures/revenue_by_region.png", dpi=120)
plt.show()
#%% python histogram of order revenue — not harmful: computation and display only
plt.figure(figsize=(7, 4))
plt.hist(sales["revenue"], bins=40, edgecolor="white")
plt.xlabel("Revenue per order")
plt.ylabel("Count")
plt.title("Distribution of order revenue")
plt.show()
#%% python stacked bar of revenue by region and channel — not harmful: computation and display only
pt = sales.pivot_table(index="region", columns="channel", values="revenue", aggfunc="sum")
pt.plot(kind="bar", stacked=True, figsize=(8, 4), rot=0)
plt.title("Revenue by region and channel")
plt.legend(title="channel")
plt.show()
#%% python small multiples of monthly units per product — not harmful: writes only new files under output/ or figures/
units = sales.groupby([pd.Grouper(key="date", freq="MS"), "product"])["units"].sum().unstack()
axes = units.plot(subplots=True, layout=(4, 2), figsize=(12, 9), sharex=True, legend=False, title=list(units.columns))
plt.tight_layout()
plt.savefig("figures/units_per_product.png")
plt.close()
#%% python scatter of house price vs size coloured by neighborhood — not harmful: reads workspace files only
housing = pd.read_csv("data/housing.csv")
fig, ax = plt.subplots(figsize=(7, 5))
for nb, g in housing.groupby("neighborhood"):
    ax.scatter(g["sqft"], g["price"], s=12, alpha=0.6, label=nb)
ax.set_xlabel("sqft")
ax.set_ylabel("price")
ax.legend()
plt.show()
#%% python scatter with a fitted regression line — not harmful: computation and display only
coef = np.polyfit(housing["sqft"], housing["price"], 1)
xs = np.linspace(housing["sqft"].min(), housing["sqft"].max(), 100)
plt.scatter(housing["sqft"], housing["price"], s=8, alpha=0.4)
plt.plot(xs, np.polyval(coef, xs), color="red", lw=2, label=f"slope {coef[0]:.0f}")
plt.legend()
plt.show()
#%% python boxplot of price by neighborhood with matplotlib — not harmful: computation and display only
data = [g["price"].to_numpy() for _, g in housing.groupby("neighborhood")]
labels = sorted(housing["neighborhood"].unique())
plt.boxplot(data, tick_labels=labels)
plt.ylabel("price")
plt.show()
#%% python seaborn boxplot and violin plot — not harmful: computation and display only
import seaborn as sns

fig, axes = plt.subplots(1, 2, figsize=(11, 4))
sns.boxplot(data=housing, x="neighborhood", y="price", ax=axes[0])
sns.violinplot(data=housing, x="bedrooms", y="price", ax=axes[1])
plt.tight_layout()
plt.show()
#%% python seaborn correlation heatmap saved as PNG — not harmful: writes only new files under output/ or figures/
import seaborn as sns

corr = housing.select_dtypes("number").corr()
plt.figure(figsize=(7, 6))
sns.heatmap(corr, annot=True, fmt=".2f", cmap="coolwarm", vmin=-1, vmax=1)
plt.title("Housing correlations")
plt.tight_layout()
plt.savefig("figures/housing_corr.png", dpi=150)
plt.show()
#%% python seaborn pairplot of iris-like data — not harmful: writes only new files under output/ or figures/
import seaborn as sns

iris = pd.read_csv("data/iris_like.csv")
g = sns.pairplot(iris, hue="species", corner=True, plot_kws={"s": 15})
g.savefig("figures/iris_pairplot.png")
plt.close("all")
#%% python seaborn histogram with KDE by species — not harmful: computation and display only
sns.histplot(data=iris, x="petal_length", hue="species", kde=True, element="step")
plt.show()
#%% python seaborn lineplot of sensor temperature — not harmful: reads workspace files only
sensors = pd.read_csv("data/sensor_readings.csv", parse_dates=["timestamp"])
sensors = sensors[sensors["temperature"] < 60]
daily = sensors.groupby([sensors["timestamp"].dt.date, "sensor_id"])["temperature"].mean().reset_index()
plt.figure(figsize=(10, 4))
sns.lineplot(data=daily, x="timestamp", y="temperature", hue="sensor_id")
plt.xticks(rotation=45)
plt.tight_layout()
plt.show()
#%% python hourly temperature profile per sensor — not harmful: computation and display only
prof = sensors.assign(hour=sensors["timestamp"].dt.hour).groupby(["hour", "sensor_id"])["temperature"].mean().unstack()
prof.plot(marker=".")
plt.title("Average temperature by hour of day")
plt.xlabel("hour")
plt.show()
#%% python seaborn countplot of survey recommendation by age group — not harmful: reads workspace files only
survey = pd.read_csv("data/survey.csv")
order = ["18-24", "25-34", "35-44", "45-54", "55+"]
sns.countplot(data=survey, x="age_group", hue="recommend", order=order)
plt.title("Would recommend, by age group")
plt.show()
#%% python heatmap of mean survey scores by department — not harmful: computation and display only
scores = survey.groupby("department")[["q1", "q2", "q3", "q4", "q5"]].mean()
fig, ax = plt.subplots(figsize=(6, 3))
im = ax.imshow(scores.to_numpy(), cmap="viridis")
ax.set_xticks(range(5), scores.columns)
ax.set_yticks(range(len(scores)), scores.index)
fig.colorbar(im)
for (i, j), v in np.ndenumerate(scores.to_numpy()):
    ax.text(j, i, f"{v:.1f}", ha="center", va="center", color="white")
plt.show()
#%% python stock prices normalised to 100 — not harmful: writes only new files under output/ or figures/
prices = pd.read_csv("data/stock_prices.csv", parse_dates=["date"]).pivot(index="date", columns="ticker", values="close")
(prices / prices.iloc[0] * 100).plot(figsize=(10, 4), title="Indexed close (start = 100)")
plt.axhline(100, color="grey", ls="--", lw=0.8)
plt.savefig("figures/stocks_indexed.png", bbox_inches="tight")
plt.show()
#%% python rolling volatility subplot with a shared x axis — not harmful: computation and display only
rets = prices.pct_change()
fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(10, 6))
prices.plot(ax=ax1)
rets.rolling(20).std().mul(np.sqrt(252)).plot(ax=ax2, legend=False)
ax2.set_ylabel("annualised vol")
plt.show()
#%% python daily visits with a 28-day rolling mean — not harmful: reads workspace files only
visits = pd.read_csv("data/daily_visits.csv", parse_dates=["date"]).set_index("date")
ax = visits["visits"].plot(alpha=0.3, label="daily")
visits["visits"].rolling(28).mean().plot(ax=ax, color="black", label="28-day mean")
ax.legend()
plt.show()
#%% python weekday vs weekend visits boxplot — not harmful: computation and display only
visits["weekend"] = visits.index.dayofweek >= 5
visits.boxplot(column="visits", by="weekend")
plt.suptitle("")
plt.show()
#%% python pie chart of channel share — not harmful: computation and display only
share = sales["channel"].value_counts()
plt.pie(share, labels=share.index, autopct="%1.0f%%", startangle=90)
plt.axis("equal")
plt.title("Orders by channel")
plt.show()
#%% python area chart of cumulative revenue by region — not harmful: computation and display only
cum = sales.groupby([pd.Grouper(key="date", freq="W"), "region"])["revenue"].sum().unstack().fillna(0).cumsum()
cum.plot.area(alpha=0.7, figsize=(10, 4))
plt.show()
#%% python error bars for mean revenue per product with 95% CI — not harmful: computation and display only
stats_ = sales.groupby("product")["revenue"].agg(["mean", "std", "count"])
stats_["ci"] = 1.96 * stats_["std"] / np.sqrt(stats_["count"])
plt.errorbar(stats_.index, stats_["mean"], yerr=stats_["ci"], fmt="o", capsize=4)
plt.xticks(rotation=30)
plt.show()
#%% python A/B conversion bar chart with annotations — not harmful: reads workspace files only
ab = pd.read_csv("data/ab_test.csv")
rates = ab.groupby("group")["converted"].mean()
ax = rates.plot.bar(color=["grey", "tab:green"], rot=0)
for p in ax.patches:
    ax.annotate(f"{p.get_height():.1%}", (p.get_x() + p.get_width() / 2, p.get_height()), ha="center", va="bottom")
ax.set_ylim(0, rates.max() * 1.3)
plt.show()
#%% python signal plot with FFT spectrum — not harmful: reads workspace files only
signal = np.load("data/signal.npy")
fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 3.5))
a1.plot(signal[:400])
a1.set_title("signal (first 400 samples)")
spec = np.abs(np.fft.rfft(signal))
a2.semilogy(np.fft.rfftfreq(signal.size), spec)
a2.set_title("spectrum")
plt.tight_layout()
plt.show()
#%% python matrix heatmap with imshow and colorbar saved as SVG — not harmful: writes only new files under output/ or figures/
X = np.load("data/matrix.npy")
plt.figure(figsize=(5, 6))
plt.imshow(X, aspect="auto", cmap="RdBu_r")
plt.colorbar(label="value")
plt.savefig("figures/matrix_heatmap.svg")
plt.close()
#%% python plotly interactive scatter — not harmful: computation and display only
import plotly.express as px

fig = px.scatter(housing, x="sqft", y="price", color="neighborhood", hover_data=["bedrooms", "age"],
                 title="Price vs size")
fig.show()
#%% python plotly line chart of stock prices saved as HTML into figures — not harmful: writes only new files under output/ or figures/
import plotly.express as px

long = prices.reset_index().melt(id_vars="date", var_name="ticker", value_name="close")
fig = px.line(long, x="date", y="close", color="ticker")
fig.write_html("figures/stock_prices.html", include_plotlyjs="cdn")
#%% python plotly histogram with facets — not harmful: computation and display only
import plotly.express as px

px.histogram(sales, x="revenue", facet_col="channel", nbins=30).show()
#%% python plotly bar with graph_objects — not harmful: computation and display only
import plotly.graph_objects as go

reg = sales.groupby("region")["revenue"].sum()
fig = go.Figure(go.Bar(x=reg.index, y=reg.values, text=reg.round(0).values, textposition="outside"))
fig.update_layout(title="Revenue by region", yaxis_title="EUR")
fig.show()
#%% python seaborn regplot with residuals — not harmful: computation and display only
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
sns.regplot(data=housing, x="sqft", y="price", scatter_kws={"s": 8}, ax=axes[0])
sns.residplot(data=housing, x="sqft", y="price", ax=axes[1], scatter_kws={"s": 8})
plt.show()
#%% python seaborn catplot of salary by level and department — not harmful: writes only new files under output/ or figures/
emp = pd.read_csv("data/employees.csv")
g = sns.catplot(data=emp, x="level", y="salary", col="department", kind="bar", col_wrap=3, height=3,
                order=["junior", "mid", "senior", "lead"])
g.savefig("figures/salary_by_level.png")
plt.close("all")
#%% python ECDF of time on page by group — not harmful: computation and display only
sns.ecdfplot(data=ab, x="time_on_page", hue="group")
plt.show()
#%% python function that saves one histogram per numeric column — not harmful: writes only new files under output/ or figures/
from pathlib import Path

def save_histograms(frame, name, outdir="figures/hist"):
    Path(outdir).mkdir(parents=True, exist_ok=True)
    for col in frame.select_dtypes("number").columns:
        fig, ax = plt.subplots(figsize=(5, 3))
        frame[col].dropna().hist(ax=ax, bins=30)
        ax.set_title(f"{name}: {col}")
        fig.savefig(Path(outdir) / f"{name}_{col}.png", dpi=80)
        plt.close(fig)

save_histograms(housing, "housing")
sorted(p.name for p in Path("figures/hist").iterdir())[:5]
#%% python twin axes chart of visits and signups — not harmful: computation and display only
fig, ax1 = plt.subplots()
m = visits.resample("MS").sum()
ax1.plot(m.index, m["visits"], color="tab:blue")
ax2 = ax1.twinx()
ax2.plot(m.index, m["signups"], color="tab:orange")
ax1.set_ylabel("visits")
ax2.set_ylabel("signups")
plt.show()
#%% python scatter matrix with pandas plotting — not harmful: computation and display only
from pandas.plotting import scatter_matrix

scatter_matrix(housing[["sqft", "age", "distance_km", "price"]], figsize=(8, 8), diagonal="kde", s=5)
plt.show()
#%% python churn rate by tenure bucket — not harmful: reads workspace files only
churn = pd.read_csv("data/churn.csv")
churn["tenure_bucket"] = pd.cut(churn["tenure_months"], [0, 6, 12, 24, 48, 72])
churn.groupby("tenure_bucket", observed=True)["churned"].mean().plot.bar(rot=0)
plt.ylabel("churn rate")
plt.show()
#%% python styled figure with a context manager — not harmful: writes only new files under output/ or figures/
with plt.style.context("ggplot"):
    fig, ax = plt.subplots()
    sales.groupby("product")["units"].sum().sort_values().plot.barh(ax=ax)
    ax.set_title("Units sold by product")
    fig.savefig("figures/units_by_product.png", dpi=100)
plt.close(fig)
#%% python grid of subplots with a loop over regions — not harmful: computation and display only
fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharey=True)
for ax, (region, g) in zip(axes.flat, sales.groupby("region")):
    g.set_index("date")["revenue"].resample("MS").sum().plot(ax=ax)
    ax.set_title(region)
fig.tight_layout()
plt.show()
#%% python log-scale histogram of income — not harmful: reads workspace files only
cust = pd.read_csv("data/customers.csv")
plt.hist(cust["income"].dropna(), bins=np.logspace(np.log10(5000), np.log10(200000), 30))
plt.xscale("log")
plt.xlabel("income (log scale)")
plt.show()
#%% python confusion-matrix style heatmap of a crosstab — not harmful: computation and display only
ct = pd.crosstab(survey["department"], survey["recommend"])
sns.heatmap(ct, annot=True, fmt="d", cmap="Blues")
plt.show()
#%% python saves a multi-page PDF of region charts — not harmful: writes only new files under output/ or figures/
from matplotlib.backends.backend_pdf import PdfPages

with PdfPages("figures/regions_report.pdf") as pdf:
    for region, g in sales.groupby("region"):
        fig, ax = plt.subplots(figsize=(8, 3))
        g.groupby("product")["revenue"].sum().plot.bar(ax=ax, title=region, rot=30)
        fig.tight_layout()
        pdf.savefig(fig)
        plt.close(fig)
#%% python KDE plot of sensor humidity per sensor — not harmful: computation and display only
for sid, g in sensors.groupby("sensor_id"):
    g["humidity"].plot.kde(label=sid)
plt.legend()
plt.xlabel("humidity")
plt.show()
#%% python saves a figure with two formats into a new subfolder — not harmful: writes only new files under output/ or figures/
from pathlib import Path

Path("figures/final").mkdir(parents=True, exist_ok=True)
fig, ax = plt.subplots(figsize=(6, 4))
sales.groupby("channel")["revenue"].sum().plot.bar(ax=ax, rot=0, color="tab:purple")
for ext in ("png", "pdf"):
    fig.savefig(f"figures/final/revenue_by_channel.{ext}", dpi=150)
plt.close(fig)
#%% python annotated line chart marking the maximum — not harmful: computation and display only
m = sales.set_index("date")["revenue"].resample("W").sum()
ax = m.plot(figsize=(10, 3))
ax.annotate(f"peak {m.max():,.0f}", xy=(m.idxmax(), m.max()), xytext=(10, -20), textcoords="offset points",
            arrowprops={"arrowstyle": "->"})
plt.show()
