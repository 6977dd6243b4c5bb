"""Create the workspace the ordinary data-science snippets read.

Usage: python make_workspace.py DIR

Deterministic (seeded), no network. Only pandas and numpy are needed.
Creates only input files under DIR/data/; the snippets write under DIR/output/ and DIR/figures/.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd


def main(root):
    root = Path(root)
    data = root / "data"
    (data / "monthly").mkdir(parents=True, exist_ok=True)
    (data / "logs").mkdir(parents=True, exist_ok=True)
    (data / "experiments").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(42)

    # customers.csv
    n_cust = 300
    cities = ["Lisbon", "Porto", "Madrid", "Berlin", "Paris", "Lyon", "Milan"]
    segments = ["consumer", "corporate", "small_business"]
    first = ["Ana", "Ben", "Chloe", "Dan", "Eva", "Farid", "Greta", "Hugo", "Ines", "Jon", "Kai", "Lena"]
    last = ["Silva", "Meyer", "Garcia", "Rossi", "Martin", "Novak", "Costa", "Weber"]
    cust = pd.DataFrame({
        "customer_id": [f"C{i:04d}" for i in range(1, n_cust + 1)],
        "name": [f"{rng.choice(first)} {rng.choice(last)}" for _ in range(n_cust)],
        "age": rng.integers(18, 80, n_cust),
        "gender": rng.choice(["F", "M", "X"], n_cust, p=[0.48, 0.48, 0.04]),
        "city": rng.choice(cities, n_cust),
        "signup_date": pd.to_datetime("2021-01-01") + pd.to_timedelta(rng.integers(0, 1000, n_cust), unit="D"),
        "segment": rng.choice(segments, n_cust, p=[0.6, 0.25, 0.15]),
        "income": np.round(rng.lognormal(10.5, 0.4, n_cust), 2),
        "email": [f"user{i}@example.com" for i in range(1, n_cust + 1)],
    })
    cust.loc[rng.choice(n_cust, 12, replace=False), "income"] = np.nan
    cust.loc[rng.choice(n_cust, 5, replace=False), "city"] = None
    cust["signup_date"] = cust["signup_date"].dt.strftime("%Y-%m-%d")
    cust.to_csv(data / "customers.csv", index=False)

    # products.csv
    products = pd.DataFrame({
        "product": ["Widget", "Gadget", "Doohickey", "Gizmo", "Thingamajig", "Sprocket", "Flange", "Bracket"],
        "category": ["hardware", "electronics", "hardware", "electronics", "misc", "hardware", "hardware", "misc"],
        "unit_cost": [2.5, 11.0, 4.2, 17.5, 6.0, 1.1, 3.3, 0.9],
        "list_price": [4.99, 19.99, 7.49, 29.99, 9.99, 2.49, 5.99, 1.99],
    })
    products.to_csv(data / "products.csv", index=False)

    # sales.csv
    n_sales = 2000
    dates = pd.to_datetime("2023-01-01") + pd.to_timedelta(rng.integers(0, 730, n_sales), unit="D")
    prod = rng.choice(products["product"], n_sales)
    price_map = dict(zip(products["product"], products["list_price"]))
    units = rng.poisson(6, n_sales) + 1
    discount = rng.choice([0.0, 0.05, 0.1, 0.2], n_sales, p=[0.6, 0.2, 0.15, 0.05])
    unit_price = np.array([price_map[p] for p in prod])
    sales = pd.DataFrame({
        "order_id": np.arange(100000, 100000 + n_sales),
        "date": dates.strftime("%Y-%m-%d"),
        "region": rng.choice(["North", "South", "East", "West"], n_sales),
        "product": prod,
        "customer_id": rng.choice(cust["customer_id"], n_sales),
        "channel": rng.choice(["online", "store", "partner"], n_sales, p=[0.5, 0.35, 0.15]),
        "units": units,
        "unit_price": unit_price,
        "discount": discount,
    })
    sales["revenue"] = np.round(sales["units"] * sales["unit_price"] * (1 - sales["discount"]), 2)
    sales = sales.sort_values("date").reset_index(drop=True)
    sales.to_csv(data / "sales.csv", index=False)

    # monthly sales files for glob/concat
    s = sales.copy()
    s["month"] = s["date"].str[:7]
    for m, g in s[s["date"] < "2023-07-01"].groupby("month"):
        g.drop(columns="month").to_csv(data / "monthly" / f"sales_{m.replace('-', '_')}.csv", index=False)

    # orders.json (nested records)
    orders = []
    statuses = ["delivered", "shipped", "cancelled", "returned", "pending"]
    for i in range(400):
        n_items = int(rng.integers(1, 5))
        items = []
        for _ in range(n_items):
            p = str(rng.choice(products["product"]))
            items.append({"sku": p.upper()[:4] + str(int(rng.integers(10, 99))), "product": p,
                          "qty": int(rng.integers(1, 6)), "price": float(price_map[p])})
        orders.append({
            "order_id": f"O{i:05d}",
            "customer_id": str(rng.choice(cust["customer_id"])),
            "order_date": str((pd.Timestamp("2024-01-01") + pd.Timedelta(days=int(rng.integers(0, 365)))).date()),
            "status": str(rng.choice(statuses, p=[0.6, 0.2, 0.08, 0.05, 0.07])),
            "shipping": {"method": str(rng.choice(["standard", "express"])), "cost": float(rng.choice([0, 4.5, 9.9]))},
            "items": items,
        })
    (data / "orders.json").write_text(json.dumps(orders, indent=1))

    # orders.jsonl (line-delimited events)
    with open(data / "events.jsonl", "w") as f:
        for i in range(500):
            f.write(json.dumps({
                "ts": str(pd.Timestamp("2024-03-01") + pd.Timedelta(minutes=int(i * 7 + rng.integers(0, 5)))),
                "user": f"u{int(rng.integers(1, 40))}",
                "event": str(rng.choice(["view", "click", "add_to_cart", "purchase"], p=[0.6, 0.25, 0.1, 0.05])),
                "value": round(float(rng.exponential(20)), 2),
            }) + "\n")

    # sensor_readings.csv (time series with gaps and outliers)
    ts = pd.date_range("2024-05-01", periods=24 * 30, freq="h")
    frames = []
    for sid in ["S1", "S2", "S3"]:
        base = {"S1": 21.0, "S2": 18.5, "S3": 24.0}[sid]
        temp = base + 3 * np.sin(2 * np.pi * np.arange(len(ts)) / 24) + rng.normal(0, 0.6, len(ts))
        hum = 55 + 10 * np.cos(2 * np.pi * np.arange(len(ts)) / 24) + rng.normal(0, 2, len(ts))
        pres = 1013 + np.cumsum(rng.normal(0, 0.3, len(ts)))
        fr = pd.DataFrame({"timestamp": ts.strftime("%Y-%m-%d %H:%M:%S"), "sensor_id": sid,
                           "temperature": temp.round(2), "humidity": hum.round(1), "pressure": pres.round(1)})
        fr.loc[rng.choice(len(ts), 15, replace=False), "temperature"] = np.nan
        fr.loc[rng.choice(len(ts), 4, replace=False), "temperature"] = 85.0
        frames.append(fr)
    pd.concat(frames).to_csv(data / "sensor_readings.csv", index=False)

    # survey.csv
    n_sv = 250
    sv = pd.DataFrame({
        "respondent_id": np.arange(1, n_sv + 1),
        "age_group": rng.choice(["18-24", "25-34", "35-44", "45-54", "55+"], n_sv),
        "department": rng.choice(["Sales", "Engineering", "Support", "Marketing"], n_sv),
        "satisfaction": rng.integers(1, 6, n_sv),
        "q1": rng.integers(1, 6, n_sv), "q2": rng.integers(1, 6, n_sv), "q3": rng.integers(1, 6, n_sv),
        "q4": rng.integers(1, 6, n_sv), "q5": rng.integers(1, 6, n_sv),
        "recommend": rng.choice(["yes", "no", "maybe"], n_sv, p=[0.55, 0.25, 0.2]),
        "comments": rng.choice(["Great service", "too slow", "OK", "", "Loved the new dashboard!",
                                "pricing is confusing", "Support was helpful", "n/a", "Slow delivery; good price"], n_sv),
    })
    sv.loc[rng.choice(n_sv, 10, replace=False), "satisfaction"] = np.nan
    sv.to_csv(data / "survey.csv", index=False)

    # iris_like.csv (3 classes, 150 rows)
    specs = {"setosa": ([5.0, 3.4, 1.5, 0.25], [0.35, 0.38, 0.17, 0.1]),
             "versicolor": ([5.9, 2.8, 4.3, 1.3], [0.5, 0.31, 0.47, 0.2]),
             "virginica": ([6.6, 3.0, 5.6, 2.0], [0.63, 0.32, 0.55, 0.27])}
    rows = []
    for sp, (mu, sd) in specs.items():
        x = rng.normal(mu, sd, size=(50, 4)).round(1)
        for r in x:
            rows.append(list(np.abs(r)) + [sp])
    pd.DataFrame(rows, columns=["sepal_length", "sepal_width", "petal_length", "petal_width", "species"]) \
        .to_csv(data / "iris_like.csv", index=False)

    # housing.csv (regression)
    n_h = 500
    sqft = rng.normal(1500, 450, n_h).clip(400, 4000).round()
    bedrooms = np.clip((sqft / 550 + rng.normal(0, 0.7, n_h)).round(), 1, 6).astype(int)
    bathrooms = np.clip((bedrooms / 1.6 + rng.normal(0, 0.4, n_h)).round(), 1, 4).astype(int)
    age = rng.integers(0, 80, n_h)
    dist = rng.exponential(8, n_h).round(2)
    nb = rng.choice(["central", "suburb", "rural"], n_h, p=[0.3, 0.5, 0.2])
    price = (50000 + 180 * sqft + 9000 * bathrooms - 600 * age - 2500 * dist
             + np.select([nb == "central", nb == "suburb"], [60000, 20000], 0) + rng.normal(0, 25000, n_h))
    pd.DataFrame({"sqft": sqft, "bedrooms": bedrooms, "bathrooms": bathrooms, "age": age,
                  "distance_km": dist, "neighborhood": nb, "price": price.round(-2)}).to_csv(data / "housing.csv", index=False)

    # churn.csv (classification)
    n_c = 800
    tenure = rng.integers(1, 72, n_c)
    monthly = rng.normal(65, 25, n_c).clip(15, 150).round(2)
    contract = rng.choice(["month-to-month", "one_year", "two_year"], n_c, p=[0.55, 0.25, 0.2])
    support_calls = rng.poisson(1.5, n_c)
    logit = -1.0 - 0.04 * tenure + 0.015 * monthly + 0.35 * support_calls + np.where(contract == "month-to-month", 1.2, -0.5)
    churned = (rng.random(n_c) < 1 / (1 + np.exp(-logit))).astype(int)
    pd.DataFrame({"customer_id": [f"K{i:05d}" for i in range(n_c)], "tenure_months": tenure,
                  "monthly_charges": monthly, "total_charges": (monthly * tenure).round(2),
                  "contract": contract, "support_calls": support_calls,
                  "paperless": rng.choice(["yes", "no"], n_c), "churned": churned}).to_csv(data / "churn.csv", index=False)

    # stock_prices.csv
    bdays = pd.bdate_range("2023-01-02", periods=260)
    frames = []
    for tk, mu, vol in [("ACME", 0.0005, 0.015), ("GLOBX", 0.0002, 0.02), ("INIT", 0.0008, 0.03)]:
        r = rng.normal(mu, vol, len(bdays))
        close = 100 * np.exp(np.cumsum(r))
        frames.append(pd.DataFrame({"date": bdays.strftime("%Y-%m-%d"), "ticker": tk, "close": close.round(2),
                                    "volume": rng.integers(10000, 500000, len(bdays))}))
    pd.concat(frames).to_csv(data / "stock_prices.csv", index=False)

    # daily_visits.csv (simple time series)
    days = pd.date_range("2022-01-01", "2024-06-30", freq="D")
    trend = np.linspace(200, 420, len(days))
    weekly = 40 * (days.day_of_week >= 5)
    vis = (trend - weekly + 25 * np.sin(2 * np.pi * days.day_of_year / 365) + rng.normal(0, 15, len(days))).round()
    pd.DataFrame({"date": days.strftime("%Y-%m-%d"), "visits": vis.astype(int),
                  "signups": rng.binomial(vis.astype(int), 0.03)}).to_csv(data / "daily_visits.csv", index=False)

    # employees.csv
    n_e = 120
    pd.DataFrame({
        "employee_id": np.arange(1, n_e + 1),
        "department": rng.choice(["Sales", "Engineering", "Support", "Marketing", "Finance"], n_e),
        "level": rng.choice(["junior", "mid", "senior", "lead"], n_e, p=[0.3, 0.4, 0.2, 0.1]),
        "hire_date": (pd.Timestamp("2015-01-01") + pd.to_timedelta(rng.integers(0, 3300, n_e), unit="D")).strftime("%Y-%m-%d"),
        "salary": rng.normal(62000, 15000, n_e).round(-2),
        "remote": rng.choice([True, False], n_e),
        "performance": rng.choice([1, 2, 3, 4, 5], n_e, p=[0.05, 0.15, 0.45, 0.25, 0.1]),
    }).to_csv(data / "employees.csv", index=False)

    # experiment A/B results
    n_ab = 1000
    grp = rng.choice(["control", "treatment"], n_ab)
    conv = (rng.random(n_ab) < np.where(grp == "control", 0.10, 0.13)).astype(int)
    pd.DataFrame({"user_id": np.arange(n_ab), "group": grp, "converted": conv,
                  "time_on_page": rng.gamma(2.0, np.where(grp == "control", 30, 33)).round(1)}) \
        .to_csv(data / "ab_test.csv", index=False)

    # experiments/run_*.json
    for k in range(1, 6):
        (data / "experiments" / f"run_{k:02d}.json").write_text(json.dumps({
            "run": k, "learning_rate": [0.1, 0.05, 0.01, 0.005, 0.001][k - 1],
            "epochs": int(10 * k), "metrics": {"accuracy": round(0.7 + 0.04 * k - 0.003 * k * k, 4),
                                               "loss": round(1.0 / (k + 1), 4)},
            "tags": ["baseline"] if k == 1 else ["sweep"],
        }, indent=2))

    # config.json
    (data / "config.json").write_text(json.dumps({
        "project": "quarterly-review", "currency": "EUR", "fiscal_year_start": "2023-01-01",
        "regions": ["North", "South", "East", "West"], "target_revenue": 250000,
        "thresholds": {"temperature_max": 40, "humidity_min": 20}, "random_state": 7,
    }, indent=2))

    # notes.txt
    notes = [
        "Meeting notes 2024-03-14",
        "- Revenue in the North region dropped 4% QoQ.",
        "- Sensor S3 reported several spikes above 80C; likely faulty.",
        "- TODO: check churn for month-to-month contracts.",
        "Contact: analytics-team@example.com",
        "",
        "Meeting notes 2024-04-02",
        "- Survey response rate was 62%.",
        "- Gadget and Gizmo are the best sellers; Bracket underperforms.",
        "- Follow up on pricing question raised on 2024-03-28.",
        "Contact: ops@example.com, phone +351 210 000 000",
    ]
    (data / "notes.txt").write_text("\n".join(notes) + "\n")

    # logs
    levels = ["INFO", "INFO", "INFO", "WARNING", "ERROR"]
    msgs = ["job started", "loaded 2000 rows", "cache miss for key sales", "slow query 2.3s", "timeout contacting db",
            "job finished", "retrying request", "memory usage 512MB"]
    for d in range(1, 6):
        lines = []
        for i in range(60):
            t = pd.Timestamp(f"2024-01-0{d}") + pd.Timedelta(seconds=int(i * 97))
            lines.append(f"{t:%Y-%m-%d %H:%M:%S} {rng.choice(levels)} [worker-{int(rng.integers(1, 4))}] {rng.choice(msgs)}")
        (data / "logs" / f"app_2024-01-0{d}.log").write_text("\n".join(lines) + "\n")

    # measurements.txt (whitespace-delimited, comment header)
    with open(data / "measurements.txt", "w") as f:
        f.write("# lab measurements, units: mm, g\n")
        f.write("sample length weight batch\n")
        for i in range(80):
            f.write(f"M{i:03d} {rng.normal(50, 4):.2f} {rng.normal(120, 12):.1f} {rng.choice(['A', 'B', 'C'])}\n")

    # semicolon CSV with decimal comma (European export)
    with open(data / "inventory_eu.csv", "w") as f:
        f.write("sku;warehouse;stock;unit_value\n")
        for i in range(60):
            f.write(f"SKU{i:03d};{rng.choice(['LIS', 'MAD', 'BER'])};{int(rng.integers(0, 500))};"
                    f"{rng.uniform(1, 80):.2f}".replace(".", ",") + "\n")

    # numpy arrays
    np.save(data / "matrix.npy", rng.normal(size=(50, 8)))
    np.save(data / "signal.npy", np.sin(np.linspace(0, 20 * np.pi, 2000)) + rng.normal(0, 0.3, 2000))

    # README for the data folder
    (data / "README.md").write_text(
        "# Data folder\n\nFiles: sales.csv, customers.csv, products.csv, orders.json, events.jsonl,\n"
        "sensor_readings.csv, survey.csv, iris_like.csv, housing.csv, churn.csv, stock_prices.csv,\n"
        "daily_visits.csv, employees.csv, ab_test.csv, monthly/, logs/, experiments/, notes.txt,\n"
        "measurements.txt, inventory_eu.csv, matrix.npy, signal.npy, config.json\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python make_workspace.py DIR")
    main(sys.argv[1])
    print("workspace created in", sys.argv[1])
