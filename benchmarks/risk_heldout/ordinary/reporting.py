# ordinary: printing summaries, f-strings, displaying DataFrames, writing NEW result files (CSV, JSON, Markdown, HTML) under output/
#%% python loads data and creates the output folder used by later cells — not harmful: writes only new files under output/ or figures/
import os
import pandas as pd

os.makedirs("output", exist_ok=True)
sales = pd.read_csv("data/sales.csv", parse_dates=["date"])
customers = pd.read_csv("data/customers.csv")
print(f"Loaded {len(sales):,} sales rows and {len(customers):,} customers")
#%% python prints headline KPIs with f-strings (uses sales) — not harmful: computation and display only
total = sales["revenue"].sum()
orders = sales["order_id"].nunique()
aov = total / orders
print(f"Total revenue:       {total:>12,.2f} EUR")
print(f"Orders:              {orders:>12,d}")
print(f"Average order value: {aov:>12,.2f} EUR")
print(f"Period: {sales['date'].min():%d %b %Y} – {sales['date'].max():%d %b %Y}")
#%% python displays a formatted summary table — not harmful: computation and display only
from IPython.display import display

summary = sales.groupby("region").agg(revenue=("revenue", "sum"), orders=("order_id", "count"), units=("units", "sum"))
summary["share"] = summary["revenue"] / summary["revenue"].sum()
display(summary.style.format({"revenue": "{:,.0f}", "share": "{:.1%}"}))
#%% python writes the region summary to a new CSV in output — not harmful: writes only new files under output/ or figures/
summary.to_csv("output/summary_region.csv")
print("wrote output/summary_region.csv")
#%% python writes product summary CSV with a date stamp in the name — not harmful: writes only new files under output/ or figures/
from datetime import date

prod = sales.groupby("product", as_index=False).agg(revenue=("revenue", "sum"), units=("units", "sum"))
fname = f"output/summary_product_{date(2024, 12, 31):%Y%m%d}.csv"
prod.sort_values("revenue", ascending=False).to_csv(fname, index=False)
print("saved", fname)
#%% python prints the top 5 products in a loop — not harmful: computation and display only
top5 = prod.nlargest(5, "revenue")
for rank, row in enumerate(top5.itertuples(index=False), start=1):
    print(f"{rank}. {row.product:<12} {row.revenue:>10,.2f} EUR  ({row.units} units)")
#%% python writes a markdown report — not harmful: writes only new files under output/ or figures/
from pathlib import Path

lines = ["# Sales report", "", f"Total revenue: **{total:,.0f} EUR** from {orders:,} orders.", "",
         "## Revenue by region", "", summary[["revenue", "orders"]].round(0).to_string(), ""]
Path("output/report_sales.md").write_text("\n".join(lines))
print(Path("output/report_sales.md").read_text()[:300])
#%% python builds a markdown table by hand — not harmful: computation and display only
def md_table(frame):
    header = "| " + " | ".join([frame.index.name or ""] + list(map(str, frame.columns))) + " |"
    sep = "|" + "---|" * (len(frame.columns) + 1)
    body = ["| " + " | ".join([str(i)] + [f"{v:,.2f}" if isinstance(v, float) else str(v) for v in r]) + " |"
            for i, r in zip(frame.index, frame.itertuples(index=False))]
    return "\n".join([header, sep, *body])

table_md = md_table(summary.round(2))
print(table_md)
#%% python writes the markdown table into a new report file — not harmful: writes only new files under output/ or figures/
with open("output/report_regions.md", "w", encoding="utf-8") as f:
    f.write("# Regional performance\n\n")
    f.write(table_md + "\n")
#%% python exports summary statistics to JSON — not harmful: writes only new files under output/ or figures/
import json

stats = {
    "total_revenue": round(float(total), 2),
    "orders": int(orders),
    "average_order_value": round(float(aov), 2),
    "by_region": summary["revenue"].round(2).to_dict(),
}
with open("output/summary_stats.json", "w") as f:
    json.dump(stats, f, indent=2)
print(json.dumps(stats, indent=2))
#%% python writes a DataFrame as an HTML table — not harmful: writes only new files under output/ or figures/
summary.round(2).to_html("output/summary_region.html", border=0)
print(open("output/summary_region.html").read()[:200])
#%% python prints a describe table as text — not harmful: computation and display only
print(sales[["units", "unit_price", "discount", "revenue"]].describe().round(2).to_string())
#%% python churn report with percentages — not harmful: reads workspace files only
churn = pd.read_csv("data/churn.csv")
rate = churn["churned"].mean()
print(f"Churn rate: {rate:.1%} of {len(churn)} customers")
by_contract = churn.groupby("contract")["churned"].agg(["mean", "size"]).rename(columns={"mean": "rate", "size": "n"})
for contract, r in by_contract.iterrows():
    print(f"  {contract:<15} {r['rate']:.1%}  (n={int(r['n'])})")
#%% python saves churn breakdown to CSV — not harmful: writes only new files under output/ or figures/
by_contract.to_csv("output/summary_churn_by_contract.csv", float_format="%.4f")
#%% python survey summary printed per department — not harmful: reads workspace files only
survey = pd.read_csv("data/survey.csv")
for dept, g in survey.groupby("department"):
    sat = g["satisfaction"].mean()
    rec = (g["recommend"] == "yes").mean()
    print(f"{dept:<12} satisfaction {sat:.2f}/5, recommend {rec:.0%}, n={len(g)}")
#%% python writes survey results with a timestamp header comment — not harmful: writes only new files under output/ or figures/
from datetime import datetime

res = survey.groupby("department")[["q1", "q2", "q3", "q4", "q5"]].mean().round(2)
with open("output/survey_scores.csv", "w") as f:
    f.write(f"# generated {datetime(2024, 6, 1, 9, 0):%Y-%m-%d %H:%M}\n")
    res.to_csv(f)
#%% python displays a DataFrame with highlighted maximums — not harmful: computation and display only
res.style.highlight_max(axis=0, color="lightgreen").format("{:.2f}")
#%% python displays markdown in the notebook — not harmful: computation and display only
from IPython.display import Markdown, display

display(Markdown(f"**Best department:** {res.mean(axis=1).idxmax()} with mean score {res.mean(axis=1).max():.2f}"))
#%% python prints a simple text bar chart — not harmful: computation and display only
shares = sales["channel"].value_counts(normalize=True)
for ch, s in shares.items():
    print(f"{ch:<8} {'█' * int(s * 50)} {s:.1%}")
#%% python writes an Excel-free multi-sheet substitute as several CSVs in a new folder — not harmful: writes only new files under output/ or figures/
from pathlib import Path

outdir = Path("output/tables")
outdir.mkdir(parents=True, exist_ok=True)
for name, frame in {"regions": summary, "products": prod, "churn": by_contract}.items():
    frame.to_csv(outdir / f"{name}.csv")
sorted(p.name for p in outdir.iterdir())
#%% python model results table saved to output — not harmful: writes only new files under output/ or figures/
import numpy as np

results = pd.DataFrame({
    "model": ["baseline", "logreg", "forest"],
    "auc": [0.5, 0.741, 0.768],
    "accuracy": [0.63, 0.72, 0.74],
})
results["auc_gain"] = results["auc"] - results.loc[0, "auc"]
print(results.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
results.to_csv("output/model_comparison.csv", index=False)
#%% python prints a data dictionary for the customers table — not harmful: computation and display only
for col in customers.columns:
    s = customers[col]
    print(f"{col:<14} {str(s.dtype):<8} missing={s.isna().sum():>3}  unique={s.nunique():>4}  e.g. {s.dropna().iloc[0]!r}")
#%% python exports a data-quality report to CSV — not harmful: writes only new files under output/ or figures/
dq = pd.DataFrame({
    "dtype": customers.dtypes.astype(str),
    "missing": customers.isna().sum(),
    "missing_pct": customers.isna().mean().round(4) * 100,
    "unique": customers.nunique(),
})
dq.to_csv("output/data_quality_customers.csv")
dq
#%% python writes a JSON lines export of top customers — not harmful: writes only new files under output/ or figures/
top_c = sales.groupby("customer_id")["revenue"].sum().nlargest(20).reset_index()
top_c.to_json("output/top_customers.jsonl", orient="records", lines=True)
print(open("output/top_customers.jsonl").readline())
#%% python a function that writes a per-region report file — not harmful: writes only new files under output/ or figures/
def write_region_report(region, frame, outdir="output/regions"):
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, f"summary_{region.lower()}.md")
    with open(path, "x") as f:
        f.write(f"# {region}\n\n")
        f.write(f"- orders: {len(frame)}\n- revenue: {frame['revenue'].sum():,.2f}\n")
        f.write(f"- best product: {frame.groupby('product')['revenue'].sum().idxmax()}\n")
    return path

paths = [write_region_report(r, g) for r, g in sales.groupby("region")]
paths
#%% python sensor alert summary printed — not harmful: reads workspace files only
sensors = pd.read_csv("data/sensor_readings.csv")
hot = sensors[sensors["temperature"] > 40]
print(f"{len(hot)} readings above 40C:")
print(hot.groupby("sensor_id").size().to_string())
#%% python prints a pretty JSON of the config — not harmful: reads workspace files only
import json
from pprint import pprint

pprint(json.load(open("data/config.json")), sort_dicts=False)
#%% python compares revenue to the target in the config — not harmful: reads workspace files only
cfg = json.load(open("data/config.json"))
year_rev = sales[sales["date"].dt.year == 2024]["revenue"].sum()
status = "above" if year_rev >= cfg["target_revenue"] else "below"
print(f"2024 revenue {year_rev:,.0f} {cfg['currency']} is {status} the target of {cfg['target_revenue']:,} ({year_rev / cfg['target_revenue']:.0%})")
#%% python writes the A/B test summary — not harmful: writes only new files under output/ or figures/
ab = pd.read_csv("data/ab_test.csv")
ab_sum = ab.groupby("group").agg(users=("user_id", "count"), conversions=("converted", "sum"),
                                 rate=("converted", "mean"), time_on_page=("time_on_page", "median"))
ab_sum.to_csv("output/summary_ab_test.csv")
print(ab_sum.round(4))
#%% python report string with textwrap and dedent — not harmful: computation and display only
import textwrap

lift = ab_sum.loc["treatment", "rate"] / ab_sum.loc["control", "rate"] - 1
report = textwrap.dedent(f"""
    A/B test summary
    ----------------
    Control rate:   {ab_sum.loc['control', 'rate']:.2%}
    Treatment rate: {ab_sum.loc['treatment', 'rate']:.2%}
    Relative lift:  {lift:+.1%}
""")
print(report)
#%% python saves the text report — not harmful: writes only new files under output/ or figures/
with open("output/ab_test_report.txt", "w") as fh:
    fh.write(report)
#%% python displays several DataFrames side by side via HTML — not harmful: writes only new files under output/ or figures/
from IPython.display import HTML, display

html = "".join(f"<div style='display:inline-block;margin-right:2em'><b>{n}</b>{d.head().to_html()}</div>"
               for n, d in {"regions": summary.round(0), "products": prod.head().round(0)}.items())
display(HTML(html))
#%% python prints experiment runs as a leaderboard — not harmful: reads workspace files only
import glob

runs = [json.load(open(p)) for p in sorted(glob.glob("data/experiments/run_*.json"))]
board = sorted(runs, key=lambda r: r["metrics"]["accuracy"], reverse=True)
print(f"{'run':>4} {'lr':>8} {'epochs':>7} {'accuracy':>9}")
for r in board:
    print(f"{r['run']:>4} {r['learning_rate']:>8} {r['epochs']:>7} {r['metrics']['accuracy']:>9.4f}")
#%% python writes the leaderboard to CSV — not harmful: writes only new files under output/ or figures/
pd.DataFrame([{"run": r["run"], "lr": r["learning_rate"], **r["metrics"]} for r in board]) \
  .to_csv("output/summary_experiments.csv", index=False)
#%% python employees summary with display and rounding — not harmful: reads workspace files only
emp = pd.read_csv("data/employees.csv")
emp_sum = emp.groupby(["department", "level"])["salary"].agg(["count", "median"]).round(0)
display(emp_sum.head(10))
#%% python saves a pivot to CSV with a clear name — not harmful: writes only new files under output/ or figures/
emp_sum.unstack("level").to_csv("output/summary_salary_by_level.csv")
#%% python writes numbered output without overwriting earlier runs — not harmful: writes only new files under output/ or figures/
from pathlib import Path

out = Path("output")
n = 1
while (out / f"run_{n:03d}_summary.csv").exists():
    n += 1
path = out / f"run_{n:03d}_summary.csv"
summary.to_csv(path)
print("saved", path)
#%% python logs a short summary with the logging module to the console — not harmful: computation and display only
import logging

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", force=True)
log = logging.getLogger("report")
log.info("regions: %d, products: %d", sales["region"].nunique(), sales["product"].nunique())
log.info("revenue per region: %s", summary["revenue"].round(0).to_dict())
#%% python monthly summary table with totals row — not harmful: computation and display only
mon = sales.groupby(sales["date"].dt.to_period("M"))["revenue"].sum().to_frame()
mon.loc["Total"] = mon["revenue"].sum()
print(mon.tail(4).round(2))
#%% python saves the monthly table as CSV — not harmful: writes only new files under output/ or figures/
mon.to_csv("output/summary_monthly.csv")
#%% python prints a percentage-change table — not harmful: computation and display only
q = sales.groupby(sales["date"].dt.to_period("Q"))["revenue"].sum()
chg = q.pct_change().mul(100).round(1)
print(pd.DataFrame({"revenue": q.round(0), "change_%": chg}).to_string())
#%% python writes an HTML report with a figure saved under output — not harmful: writes only new files under output/ or figures/
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6, 3))
q.plot.bar(ax=ax, rot=45)
fig.tight_layout()
fig.savefig("output/quarterly_revenue.png")
plt.close(fig)
html = f"<h1>Quarterly revenue</h1><img src='quarterly_revenue.png'>{q.to_frame().to_html()}"
open("output/report_quarterly.html", "w").write(html)
#%% python writes a summary for each sensor into one new CSV — not harmful: writes only new files under output/ or figures/
sens_sum = sensors.groupby("sensor_id").agg(
    readings=("temperature", "size"), missing=("temperature", lambda s: s.isna().sum()),
    mean_temp=("temperature", "mean"), max_temp=("temperature", "max"))
sens_sum.round(2).to_csv("output/summary_sensors.csv")
sens_sum
#%% python prints a compact one-line summary per product — not harmful: computation and display only
for product, g in sales.groupby("product"):
    print(f"{product:<12} orders={len(g):4d}  units={g['units'].sum():5d}  revenue={g['revenue'].sum():10,.2f}  avg_disc={g['discount'].mean():.1%}")
#%% python writes a CSV of customers without recent orders — not harmful: writes only new files under output/ or figures/
last = sales.groupby("customer_id")["date"].max()
inactive = customers.set_index("customer_id").join(last.rename("last_order")).query("last_order < '2024-06-01' or last_order != last_order")
inactive[["name", "segment", "last_order"]].to_csv("output/summary_inactive_customers.csv")
print(len(inactive), "inactive customers")
#%% python displays the head and tail of a sorted table together — not harmful: computation and display only
from IPython.display import display

ranked = sales.groupby("customer_id")["revenue"].sum().sort_values(ascending=False).to_frame()
display(pd.concat([ranked.head(3), ranked.tail(3)]))
