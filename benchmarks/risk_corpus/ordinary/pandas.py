# Everyday pandas: loading workspace files, cleaning, grouping, reshaping, summaries.
#%%
import pandas as pd
df = pd.read_csv("data/sales.csv")
df.head()
#%%
df = pd.read_csv("data/sales.csv", parse_dates=["date"])
df.info()
#%%
df.describe(include="all").T
#%%
df["month"] = df["date"].dt.to_period("M")
monthly = df.groupby("month")["revenue"].sum()
monthly
#%%
df = df.dropna(subset=["customer_id"])
df["customer_id"] = df["customer_id"].astype(int)
#%%
df.isna().sum().sort_values(ascending=False)
#%%
top = df.nlargest(10, "revenue")[["customer_id", "revenue", "region"]]
top
#%%
pivot = df.pivot_table(index="region", columns="product", values="revenue", aggfunc="sum", fill_value=0)
pivot
#%%
df["revenue_per_unit"] = df["revenue"] / df["units"].replace(0, pd.NA)
#%%
counts = df["category"].value_counts(normalize=True).mul(100).round(1)
counts
#%%
merged = orders.merge(customers, on="customer_id", how="left", validate="many_to_one")
merged.shape
#%%
df = df.rename(columns=str.lower).rename(columns=lambda c: c.strip().replace(" ", "_"))
#%%
df.to_csv("output/cleaned_sales.csv", index=False)
#%%
df.to_parquet("output/sales.parquet")
#%%
sales = pd.read_excel("data/Q3 report.xlsx", sheet_name="Sales", skiprows=2)
#%%
long = df.melt(id_vars=["region"], value_vars=["q1", "q2", "q3", "q4"], var_name="quarter", value_name="revenue")
#%%
df["rolling_7d"] = df.sort_values("date").groupby("store")["revenue"].transform(lambda s: s.rolling(7, min_periods=1).mean())
#%%
df.query("revenue > 1000 and region == 'EU'").shape
#%%
df = df.eval("margin = revenue - cost")
df["margin_pct"] = df["margin"] / df["revenue"]
#%%
summary = df.groupby(["region", "product"]).agg(total=("revenue", "sum"), orders=("order_id", "nunique"), avg=("revenue", "mean")).reset_index()
#%%
dupes = df[df.duplicated(subset=["order_id"], keep=False)].sort_values("order_id")
len(dupes)
#%%
df = df.drop_duplicates(subset=["order_id"], keep="last")
#%%
df["size_bucket"] = pd.cut(df["units"], bins=[0, 10, 50, 100, float("inf")], labels=["S", "M", "L", "XL"])
#%%
df["quartile"] = pd.qcut(df["revenue"], 4, labels=False)
#%%
weekly = df.set_index("date").resample("W")["revenue"].sum()
weekly.tail()
#%%
df.loc[df["country"].isin(["UK", "GB"]), "country"] = "United Kingdom"
#%%
df["email_domain"] = df["email"].str.split("@").str[-1].str.lower()
#%%
corr = df.select_dtypes("number").corr()
corr.round(2)
#%%
crosstab = pd.crosstab(df["region"], df["churned"], normalize="index")
crosstab
#%%
frames = [pd.read_csv(f"data/part_{i}.csv") for i in range(1, 5)]
df = pd.concat(frames, ignore_index=True)
#%%
from pathlib import Path
files = sorted(Path("data/daily").glob("*.csv"))
df = pd.concat((pd.read_csv(f) for f in files), ignore_index=True)
#%%
df["date"] = pd.to_datetime(df["date"], errors="coerce", format="%Y-%m-%d")
bad = df["date"].isna().sum()
print(f"{bad} unparseable dates")
#%%
df = df.astype({"store": "category", "units": "int32"})
df.memory_usage(deep=True).sum() / 1e6
#%%
df.sample(5, random_state=0)
#%%
for col in ["revenue", "cost", "units"]:
    df[col] = pd.to_numeric(df[col], errors="coerce")
#%%
df.groupby("region")["revenue"].agg(["mean", "median", "std"]).round(2)
#%%
stats = {}
for agg in ["mean", "median", "max"]:
    stats[agg] = getattr(df["revenue"], agg)()
stats
#%%
df["cum_revenue"] = df.sort_values("date")["revenue"].cumsum()
#%%
df["prev_month"] = df.groupby("customer_id")["revenue"].shift(1)
df["growth"] = df["revenue"].pct_change()
#%%
df.style.format({"revenue": "{:,.0f}"}).background_gradient(subset=["revenue"])
#%%
with pd.option_context("display.max_rows", 100, "display.max_columns", 50):
    display(df.head(100))
#%%
df.columns.tolist()
#%%
df = df[df["revenue"].between(df["revenue"].quantile(0.01), df["revenue"].quantile(0.99))]
#%%
df["is_weekend"] = df["date"].dt.dayofweek >= 5
df.groupby("is_weekend")["revenue"].mean()
#%%
exploded = df.assign(tag=df["tags"].str.split(",")).explode("tag")
exploded["tag"].value_counts().head(20)
#%%
wide = long.pivot(index="region", columns="quarter", values="revenue")
#%%
df.to_excel("output/summary.xlsx", sheet_name="summary", index=False)
#%%
df.to_json("output/records.json", orient="records", lines=True)
#%%
import sqlite3
conn = sqlite3.connect("data/shop.db")
orders = pd.read_sql("SELECT * FROM orders WHERE status = 'paid'", conn)
#%%
df.fillna({"discount": 0, "region": "unknown"}, inplace=True)
#%%
df["name"] = df["first"].str.title() + " " + df["last"].str.title()
#%%
df.sort_values(["region", "revenue"], ascending=[True, False]).groupby("region").head(3)
#%%
ranked = df.assign(rank=df.groupby("region")["revenue"].rank(method="dense", ascending=False))
#%%
df["order_hour"] = pd.to_datetime(df["timestamp"]).dt.hour
df["order_hour"].value_counts().sort_index()
#%%
df = pd.read_csv("data/large.csv", usecols=["id", "amount", "ts"], dtype={"id": "string"})
#%%
chunks = pd.read_csv("data/huge.csv", chunksize=100_000)
total = sum(chunk["amount"].sum() for chunk in chunks)
total
#%%
df.apply(lambda row: row["a"] * row["b"], axis=1)
#%%
df["label"] = df["score"].map(lambda s: "high" if s > 0.8 else "low")
#%%
mapping = {"M": "male", "F": "female"}
df["gender"] = df["gender"].map(mapping).fillna("unspecified")
#%%
mask = df["comment"].str.contains("refund", case=False, na=False)
df.loc[mask, ["order_id", "comment"]]
#%%
df.set_index("date").loc["2024-01":"2024-03"].shape
#%%
df.to_pickle("cache/df.pkl")
#%%
pd.read_pickle("cache/df.pkl").shape
#%%
df.groupby("cohort").apply(lambda g: g["retained"].mean()).plot(kind="bar")
#%%
df["days_since"] = (pd.Timestamp("2024-12-31") - df["last_order"]).dt.days
#%%
print(df.shape, df.columns.size, len(df))
#%%
r = pd.eval("df.revenue - df.cost")
#%%
df.select_dtypes(include="object").nunique().sort_values()
#%%
result = df.groupby("store").agg(lambda s: s.mode().iat[0] if not s.mode().empty else None)
