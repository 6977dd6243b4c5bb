# ordinary: pandas cleaning, groupby, merge, pivot, describe, value_counts and datetime handling on workspace data
#%% python loads sales and customers used by the following cells — not harmful: reads workspace files only
import pandas as pd

df = pd.read_csv("data/sales.csv", parse_dates=["date"])
customers = pd.read_csv("data/customers.csv", parse_dates=["signup_date"])
products = pd.read_csv("data/products.csv")
df.head()
#%% python describes numeric columns (uses df from cell 1) — not harmful: computation and display only
df.describe().T
#%% python describes categorical columns — not harmful: computation and display only
df.describe(include="object")
#%% python counts orders per region — not harmful: computation and display only
df["region"].value_counts()
#%% python normalised value counts of the channel — not harmful: computation and display only
df.channel.value_counts(normalize=True).round(3)
#%% python total revenue per region and product — not harmful: computation and display only
summary = df.groupby(["region", "product"], as_index=False)["revenue"].sum()
summary.sort_values("revenue", ascending=False).head(10)
#%% python several aggregations with named aggregation — not harmful: computation and display only
agg = df.groupby("product").agg(
    orders=("order_id", "count"),
    units=("units", "sum"),
    revenue=("revenue", "sum"),
    avg_discount=("discount", "mean"),
)
agg.sort_values("revenue", ascending=False)
#%% python monthly revenue with resample — not harmful: computation and display only
monthly = df.set_index("date")["revenue"].resample("MS").sum()
monthly.tail(6)
#%% python monthly revenue per region with Grouper and unstack — not harmful: computation and display only
by_month_region = (
    df.groupby([pd.Grouper(key="date", freq="MS"), "region"])["revenue"]
    .sum()
    .unstack("region")
    .fillna(0)
)
by_month_region.head()
#%% python pivot table of revenue by region and channel — not harmful: computation and display only
pt = pd.pivot_table(df, values="revenue", index="region", columns="channel", aggfunc="sum", margins=True)
pt.round(0)
#%% python merges sales with customers — not harmful: computation and display only
merged = df.merge(customers[["customer_id", "segment", "city", "age"]], on="customer_id", how="left", validate="m:1")
print(merged.shape)
merged.head()
#%% python merges with products to compute margin — not harmful: computation and display only
m2 = df.merge(products, on="product", how="left")
m2["margin"] = m2["revenue"] - m2["units"] * m2["unit_cost"]
m2.groupby("category")["margin"].sum().round(2)
#%% python revenue by customer segment — not harmful: computation and display only
merged.groupby("segment")["revenue"].agg(["sum", "mean", "count"]).round(2)
#%% python adds date parts — not harmful: computation and display only
df["year"] = df["date"].dt.year
df["month"] = df["date"].dt.month
df["weekday"] = df["date"].dt.day_name()
df[["date", "year", "month", "weekday"]].head()
#%% python revenue by weekday ordered Monday to Sunday — not harmful: computation and display only
order = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
df.groupby("weekday")["revenue"].mean().reindex(order).round(2)
#%% python year over year comparison — not harmful: computation and display only
yoy = df.pivot_table(index="month", columns="year", values="revenue", aggfunc="sum")
yoy["growth_%"] = (yoy[2024] / yoy[2023] - 1) * 100
yoy.round(1)
#%% python cleans the customers table — not harmful: computation and display only
cust = customers.copy()
cust["name"] = cust["name"].str.strip().str.title()
cust["city"] = cust["city"].fillna("Unknown")
cust["income"] = cust["income"].fillna(cust.groupby("segment")["income"].transform("median"))
cust.isna().sum()
#%% python bins ages into groups — not harmful: computation and display only
cust["age_band"] = pd.cut(cust["age"], bins=[17, 25, 35, 50, 65, 80], labels=["18-25", "26-35", "36-50", "51-65", "66-80"])
cust["age_band"].value_counts().sort_index()
#%% python income quartiles with qcut — not harmful: computation and display only
cust["income_q"] = pd.qcut(cust["income"], 4, labels=["Q1", "Q2", "Q3", "Q4"])
cust.groupby("income_q", observed=True)["age"].mean().round(1)
#%% python drops duplicate rows and reports — not harmful: computation and display only
before = len(df)
df = df.drop_duplicates()
print(f"removed {before - len(df)} duplicates")
#%% python filters with query — not harmful: computation and display only
big = df.query("units >= 10 and discount == 0 and region in ['North', 'East']")
big.shape
#%% python top 3 products per region with nlargest in groupby — not harmful: computation and display only
(df.groupby(["region", "product"])["revenue"].sum()
   .groupby(level=0, group_keys=False).nlargest(3))
#%% python cumulative revenue per customer — not harmful: computation and display only
df = df.sort_values("date")
df["cum_revenue"] = df.groupby("customer_id")["revenue"].cumsum()
df[["customer_id", "date", "revenue", "cum_revenue"]].head(8)
#%% python rank customers by total revenue — not harmful: computation and display only
cust_rev = df.groupby("customer_id")["revenue"].sum().rename("total").to_frame()
cust_rev["rank"] = cust_rev["total"].rank(ascending=False, method="dense").astype(int)
cust_rev.sort_values("rank").head()
#%% python rolling 7-day revenue — not harmful: computation and display only
daily = df.groupby("date")["revenue"].sum().asfreq("D", fill_value=0)
rolling = daily.rolling(7).mean()
rolling.dropna().head()
#%% python sensor data: loads and handles missing values and outliers — not harmful: reads workspace files only
sensors = pd.read_csv("data/sensor_readings.csv", parse_dates=["timestamp"])
sensors.loc[sensors["temperature"] > 60, "temperature"] = pd.NA
sensors["temperature"] = sensors.groupby("sensor_id")["temperature"].transform(lambda s: s.interpolate(limit_direction="both"))
sensors["temperature"].isna().sum()
#%% python daily mean per sensor — not harmful: computation and display only
daily_sensor = (sensors.set_index("timestamp")
                .groupby("sensor_id")[["temperature", "humidity"]]
                .resample("D").mean()
                .round(2))
daily_sensor.head()
#%% python melts wide survey questions to long format — not harmful: reads workspace files only
survey = pd.read_csv("data/survey.csv")
long = survey.melt(id_vars=["respondent_id", "department"], value_vars=["q1", "q2", "q3", "q4", "q5"],
                   var_name="question", value_name="score")
long.groupby(["department", "question"])["score"].mean().unstack().round(2)
#%% python crosstab of recommendation by age group — not harmful: computation and display only
pd.crosstab(survey["age_group"], survey["recommend"], normalize="index").round(2)
#%% python string cleaning of survey comments — not harmful: computation and display only
comments = (survey["comments"].fillna("").str.lower().str.strip()
            .replace({"n/a": "", "ok": "okay"}))
comments[comments.str.contains("slow")].value_counts()
#%% python explodes orders items — not harmful: reads workspace files only
import json
orders = json.load(open("data/orders.json"))
odf = pd.DataFrame(orders)
exploded = odf.explode("items").reset_index(drop=True)
items = pd.concat([exploded.drop(columns="items"), pd.json_normalize(exploded["items"])], axis=1)
items["line_total"] = items["qty"] * items["price"]
items.groupby("status")["line_total"].sum().round(2)
#%% python orders per week with status counts — not harmful: computation and display only
odf["order_date"] = pd.to_datetime(odf["order_date"])
weekly_status = odf.groupby([pd.Grouper(key="order_date", freq="W"), "status"]).size().unstack(fill_value=0)
weekly_status.tail()
#%% python assign with lambda in a method chain — not harmful: computation and display only
result = (
    df.assign(gross=lambda d: d.units * d.unit_price)
      .assign(discount_amount=lambda d: d.gross - d.revenue)
      .groupby("channel", as_index=False)[["gross", "discount_amount"]].sum()
      .round(2)
)
result
#%% python map and replace categorical codes — not harmful: computation and display only
region_code = {"North": "N", "South": "S", "East": "E", "West": "W"}
df["region_code"] = df["region"].map(region_code)
df["channel"] = df["channel"].replace({"partner": "reseller"})
df[["region", "region_code", "channel"]].drop_duplicates().head()
#%% python applies a function per group — not harmful: computation and display only
def top_share(g):
    return g.nlargest(1, "revenue")["revenue"].iloc[0] / g["revenue"].sum()

df.groupby("region")[["revenue"]].apply(top_share).round(4)
#%% python employees: tenure in years and salary by level — not harmful: reads workspace files only
emp = pd.read_csv("data/employees.csv", parse_dates=["hire_date"])
emp["tenure_years"] = ((pd.Timestamp("2025-01-01") - emp["hire_date"]).dt.days / 365.25).round(1)
emp.pivot_table(index="department", columns="level", values="salary", aggfunc="median").round(-2)
#%% python stock returns with pct_change per ticker — not harmful: reads workspace files only
prices = pd.read_csv("data/stock_prices.csv", parse_dates=["date"])
wide = prices.pivot(index="date", columns="ticker", values="close")
returns = wide.pct_change().dropna()
returns.describe().round(4)
#%% python correlation of ticker returns — not harmful: computation and display only
returns.corr().round(2)
#%% python shifts and lags for time series features — not harmful: reads workspace files only
visits = pd.read_csv("data/daily_visits.csv", parse_dates=["date"]).set_index("date")
visits["lag_1"] = visits["visits"].shift(1)
visits["lag_7"] = visits["visits"].shift(7)
visits["diff_7"] = visits["visits"].diff(7)
visits.dropna().head()
#%% python checks for unmatched keys with an indicator merge — not harmful: computation and display only
chk = df[["customer_id"]].drop_duplicates().merge(customers[["customer_id"]], how="outer", indicator=True)
chk["_merge"].value_counts()
#%% python sort and select columns with loc and iloc — not harmful: computation and display only
cols = ["date", "region", "product", "revenue"]
df.sort_values(["region", "revenue"], ascending=[True, False]).loc[:, cols].iloc[:10]
#%% python converts types and memory optimisation — not harmful: computation and display only
small = df.copy()
for c in ["region", "product", "channel"]:
    small[c] = small[c].astype("category")
small["units"] = pd.to_numeric(small["units"], downcast="integer")
print(df.memory_usage(deep=True).sum() // 1024, "KB ->", small.memory_usage(deep=True).sum() // 1024, "KB")
#%% python window of the last 90 days — not harmful: computation and display only
cutoff = df["date"].max() - pd.Timedelta(days=90)
recent = df[df["date"] > cutoff]
recent.groupby("product")["units"].sum().sort_values(ascending=False)
#%% python customer cohort by signup month — not harmful: computation and display only
cust["cohort"] = cust["signup_date"].dt.to_period("M")
m3 = df.merge(cust[["customer_id", "cohort"]], on="customer_id")
m3["order_month"] = m3["date"].dt.to_period("M")
cohort_counts = m3.groupby(["cohort", "order_month"])["customer_id"].nunique().unstack(fill_value=0)
cohort_counts.iloc[:5, :5]
#%% python where and mask for conditional columns — not harmful: computation and display only
df["size"] = "small"
df.loc[df["units"] >= 8, "size"] = "large"
df["revenue_capped"] = df["revenue"].where(df["revenue"] < 200, 200)
df["size"].value_counts()
#%% python inventory table clean-up — not harmful: reads workspace files only
inv = pd.read_csv("data/inventory_eu.csv", sep=";", decimal=",")
inv["stock_value"] = inv["stock"] * inv["unit_value"]
inv.groupby("warehouse").agg(skus=("sku", "nunique"), value=("stock_value", "sum")).round(2)
#%% python stacking and resetting a MultiIndex — not harmful: computation and display only
stacked = pt.drop(index="All", columns="All").stack().rename("revenue").reset_index()
stacked.head()
#%% python date range reindex to fill missing days per product — not harmful: computation and display only
units_daily = df.groupby(["date", "product"])["units"].sum().unstack(fill_value=0)
full = units_daily.reindex(pd.date_range(units_daily.index.min(), units_daily.index.max()), fill_value=0)
print(full.shape)
