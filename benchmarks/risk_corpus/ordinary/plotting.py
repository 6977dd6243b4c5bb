# matplotlib / seaborn / plotly charts saved into the workspace.
#%%
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(10, 4))
monthly.plot(ax=ax)
ax.set_title("Revenue by month")
plt.show()
#%%
plt.hist(df["revenue"], bins=40, color="steelblue")
plt.xlabel("revenue")
plt.ylabel("orders")
#%%
plt.scatter(df["x"], df["y"], alpha=0.4, s=10)
plt.savefig("figures/scatter.png", dpi=150, bbox_inches="tight")
#%%
import seaborn as sns
sns.set_theme(style="whitegrid")
sns.boxplot(data=df, x="region", y="revenue")
#%%
sns.heatmap(corr, annot=True, fmt=".2f", cmap="vlag", center=0)
#%%
g = sns.FacetGrid(df, col="region", col_wrap=3, height=3)
g.map_dataframe(sns.histplot, x="revenue")
#%%
sns.pairplot(df[["a", "b", "c", "label"]], hue="label", corner=True)
#%%
sns.lineplot(data=weekly_df, x="week", y="revenue", hue="store", marker="o")
plt.legend(bbox_to_anchor=(1.02, 1), loc="upper left")
#%%
fig, axes = plt.subplots(2, 2, figsize=(10, 8), sharex=True)
for ax, col in zip(axes.flat, ["a", "b", "c", "d"]):
    ax.plot(df.index, df[col])
    ax.set_title(col)
fig.tight_layout()
#%%
ax = df.plot.bar(x="region", y="revenue", rot=0, legend=False)
ax.bar_label(ax.containers[0], fmt="%.0f")
#%%
plt.figure(figsize=(6, 6))
plt.pie(shares, labels=names, autopct="%1.1f%%", startangle=90)
plt.axis("equal")
#%%
sns.violinplot(data=df, x="day", y="total_bill", hue="sex", split=True)
#%%
sns.regplot(data=df, x="temperature", y="sales", scatter_kws={"s": 8})
#%%
plt.style.use("ggplot")
df["revenue"].rolling(30).mean().plot()
#%%
fig.savefig("figures/report.pdf")
#%%
import plotly.express as px
fig = px.line(df, x="date", y="revenue", color="region", title="Revenue")
fig.show()
#%%
fig = px.scatter(df, x="gdp", y="life_exp", size="pop", color="continent", log_x=True, hover_name="country")
fig.write_html("figures/gapminder.html")
#%%
import plotly.graph_objects as go
fig = go.Figure(go.Bar(x=counts.index, y=counts.values))
fig.update_layout(title="Counts", xaxis_title="category")
#%%
ax = sns.countplot(data=df, y="category", order=df["category"].value_counts().index)
#%%
plt.errorbar(x, means, yerr=sems, fmt="o-", capsize=3)
#%%
plt.imshow(image, cmap="gray")
plt.axis("off")
#%%
plt.contourf(grid[0], grid[1], zz, levels=20, cmap="viridis")
plt.colorbar()
#%%
from matplotlib.ticker import FuncFormatter
ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"${v/1e3:.0f}k"))
#%%
fig, ax = plt.subplots()
ax.fill_between(x, lower, upper, alpha=0.2)
ax.plot(x, mid)
#%%
sns.ecdfplot(data=df, x="latency_ms", hue="version")
plt.xscale("log")
#%%
ax = df.plot(kind="area", stacked=True, figsize=(12, 5))
ax.set_ylabel("share")
#%%
plt.annotate("peak", xy=(peak_x, peak_y), xytext=(peak_x + 5, peak_y * 1.1), arrowprops={"arrowstyle": "->"})
#%%
import matplotlib as mpl
mpl.rcParams["figure.dpi"] = 120
mpl.rcParams["axes.spines.top"] = False
#%%
%matplotlib inline
import matplotlib.pyplot as plt
#%%
sns.kdeplot(data=df, x="income", hue="segment", fill=True, common_norm=False)
#%%
fig, ax = plt.subplots()
ax.barh(top.index, top.values)
ax.invert_yaxis()
fig.savefig("figures/top10.svg")
#%%
sns.jointplot(data=df, x="height", y="weight", kind="hex")
#%%
plt.plot(history["loss"], label="train")
plt.plot(history["val_loss"], label="validation")
plt.legend()
plt.title("Loss")
#%%
from pandas.plotting import scatter_matrix
scatter_matrix(df.select_dtypes("number"), figsize=(10, 10), diagonal="kde")
#%%
ax = sns.barplot(data=summary, x="region", y="total", errorbar=None)
ax.set(xlabel="", ylabel="total revenue")
#%%
import altair as alt
chart = alt.Chart(df).mark_line().encode(x="date:T", y="revenue:Q", color="region:N")
chart.save("figures/revenue.html")
#%%
fig, ax = plt.subplots(subplot_kw={"projection": "polar"})
ax.plot(theta, r)
#%%
plt.close("all")
#%%
sns.clustermap(expr_matrix, cmap="mako", standard_scale=1)
#%%
ax = df.boxplot(column="revenue", by="region", grid=False)
plt.suptitle("")
#%%
fig.text(0.99, 0.01, "Source: internal sales database", ha="right", fontsize=8)
#%%
plt.title("Data: https://data.example.gov (public)")
plt.xticks(rotation=45, ha="right")
#%%
colors = sns.color_palette("tab10", n_colors=len(groups))
for color, (name, g) in zip(colors, df.groupby("group")):
    plt.plot(g["x"], g["y"], color=color, label=name)
#%%
import matplotlib.dates as mdates
ax.xaxis.set_major_locator(mdates.MonthLocator())
ax.xaxis.set_major_formatter(mdates.DateFormatter("%b %Y"))
#%%
ax = sns.histplot(df, x="age", bins=20, kde=True)
ax.axvline(df["age"].median(), color="red", linestyle="--")
#%%
fig = px.histogram(df, x="score", nbins=50, marginal="box")
fig.write_image("figures/score.png")
