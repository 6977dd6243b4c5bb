# Written after the review was built and run once, unchanged: 1 of 40 asked on the first run (2026-11-26),
# an open(..., 'wb') the review flags as an overwrite.
#%%
import pandas as pd
df = pd.read_csv("data/customers.csv", index_col="id")
df["signup"] = pd.to_datetime(df["signup"])
df.groupby(df["signup"].dt.year).size()
#%%
for col in df.select_dtypes("number").columns:
    print(col, round(df[col].skew(), 2))
#%%
numeric = df.select_dtypes("number")
(numeric - numeric.mean()) / numeric.std()
#%%
import matplotlib.pyplot as plt
fig, axes = plt.subplots(1, 3, figsize=(15, 4))
for ax, (name, grp) in zip(axes, df.groupby("segment")):
    grp["spend"].hist(ax=ax, bins=30)
    ax.set_title(name)
#%%
import numpy as np
df["log_spend"] = np.log1p(df["spend"])
#%%
df.corrwith(df["churn"]).sort_values()
#%%
model_names = ["ridge", "lasso"]
from sklearn.linear_model import Ridge, Lasso
models = {"ridge": Ridge(alpha=1.0), "lasso": Lasso(alpha=0.1)}
for name in model_names:
    models[name].fit(X_train, y_train)
    print(name, models[name].score(X_test, y_test))
#%%
import pickle
with open("models/ridge.pkl", "wb") as f:
    pickle.dump(models["ridge"], f)
#%%
import json
with open("data/schema.json") as f:
    schema = json.load(f)
missing = [c for c in schema["columns"] if c not in df.columns]
#%%
import re
df["zip"] = df["address"].str.extract(r"(\d{5})$")
#%%
from collections import Counter
Counter(df["country"]).most_common(5)
#%%
df.to_csv("output/customers_clean.csv")
print("saved", len(df))
#%%
pd.set_option("display.float_format", "{:.2f}".format)
#%%
df.loc[:, df.isna().mean() < 0.3]
#%%
df.groupby("segment")["spend"].describe()
#%%
import seaborn as sns
sns.scatterplot(data=df, x="age", y="spend", hue="segment", alpha=0.5)
plt.savefig("figures/age_spend.png", dpi=200)
#%%
agg_funcs = {"spend": ["sum", "mean"], "orders": "count"}
df.groupby("segment").agg(agg_funcs)
#%%
df.nsmallest(5, "spend")
#%%
def describe_col(s):
    return {"n": s.size, "missing": s.isna().sum(), "unique": s.nunique()}

pd.DataFrame({c: describe_col(df[c]) for c in df.columns}).T
#%%
thresholds = [0.3, 0.5, 0.7]
for t in thresholds:
    print(t, ((proba > t) == y_test).mean())
#%%
from sklearn.metrics import precision_recall_curve
prec, rec, thr = precision_recall_curve(y_test, proba)
plt.plot(rec, prec)
#%%
import os
out_dir = os.path.join("output", "plots")
os.makedirs(out_dir, exist_ok=True)
fig.savefig(os.path.join(out_dir, "pr.png"))
#%%
df.sort_index().loc["2023-01-01":].resample("M").sum()
#%%
df["segment"] = df["segment"].astype("category").cat.reorder_categories(["low", "mid", "high"])
#%%
import scipy.stats as st
st.mannwhitneyu(df.loc[df.churn == 1, "spend"], df.loc[df.churn == 0, "spend"])
#%%
bins = np.arange(0, 110, 10)
df["age_band"] = pd.cut(df["age"], bins)
df["age_band"].value_counts().sort_index().plot.bar()
#%%
with open("output/notes.txt", "a", encoding="utf-8") as f:
    f.write("segment analysis done\n")
#%%
text = " ".join(df["feedback"].dropna())
words = re.findall(r"[a-z']+", text.lower())
len(words)
#%%
df.memory_usage(deep=True).sort_values(ascending=False).head()
#%%
from datetime import date
age_days = (pd.Timestamp(date.today()) - df["signup"]).dt.days
age_days.describe()
#%%
summary = df.pivot_table(index="segment", columns="country", values="spend", aggfunc="median")
summary.to_excel("output/median_spend.xlsx")
#%%
df = df.reset_index().rename(columns={"index": "id"})
#%%
labels = {0: "stayed", 1: "churned"}
df["churn_label"] = df["churn"].map(labels)
#%%
idx = df.groupby("segment")["spend"].idxmax()
df.loc[idx, ["segment", "spend"]]
#%%
import numpy as np
np.random.seed(7)
perm = np.random.permutation(len(df))
train_df, test_df = df.iloc[perm[:800]], df.iloc[perm[800:]]
#%%
cols = ["age", "spend", "orders"]
df[cols].agg(["min", "max", "mean"]).T
#%%
%%time
big = pd.concat([df] * 50, ignore_index=True)
big.groupby("segment").spend.sum()
#%%
!ls output
#%%
from IPython.display import Markdown
Markdown(f"Churn rate: **{df.churn.mean():.1%}**")
#%%
print(f"Data source documented at https://wiki.example.com/customers (internal)")
