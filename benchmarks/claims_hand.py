"""Hand-written (answer, outputs) pairs for ``benchmarks/claims.py``: answers as models write
them (markdown bullets and tables, bold numbers, approximations, ranges, R², p-values, dates,
quarters, thresholds), with what each number is.

``planted``: numbers written wrong on purpose (the error named); ``unprinted``: numbers that
are true or harmless but printed by no step (a count of listed things, a threshold the
model chose, arithmetic done in the head): by the rule they are marked, and the benchmark
reports them apart, not as false marks nor as catches.
"""

from __future__ import annotations

from typing import Any


def pair(pid: str, instruction: str, outputs: list[str], answer: str,
         planted: dict[str, str] | None = None, unprinted: list[str] | None = None
         ) -> dict[str, Any]:
    return {"id": f"hand-{pid}", "scenario": "hand", "instruction": instruction,
            "outputs": outputs, "answer": answer,
            "planted": [{"text": t, "error": e} for t, e in (planted or {}).items()],
            "unprinted": unprinted or []}


DESCRIBE = """              price        qty
count   1200.000000  1200.0000
mean      41.273333     4.4925
std       12.904418     2.2601
min        3.100000     1.0000
25%       32.475000     2.0000
50%       40.950000     4.0000
75%       49.825000     6.0000
max       97.800000     8.0000"""

GROUPBY = """region
East     184233.12
North    251907.55
South    120044.90
West      98310.01
Name: revenue, dtype: float64"""

REPORT = """              precision    recall  f1-score   support

           0       0.91      0.94      0.92       812
           1       0.78      0.70      0.74       258

    accuracy                           0.88      1070
   macro avg       0.84      0.82      0.83      1070
weighted avg       0.88      0.88      0.88      1070"""

OLS = """                            OLS Regression Results
==============================================================================
Dep. Variable:                  sales   R-squared:                       0.873
Model:                            OLS   Adj. R-squared:                  0.871
No. Observations:                 365   F-statistic:                     1228.
==============================================================================
                 coef    std err          t      P>|t|      [0.025      0.975]
------------------------------------------------------------------------------
const        112.4411      8.120     13.847      0.000      96.473     128.409
ads            3.2108      0.092     34.902      0.000       3.030       3.392"""

LS = """-rw-r--r-- 1 user user 1073741824 Mar  3 10:12 big.bin
-rw-r--r-- 1 user user   52428800 Mar  3 10:12 sample.csv
-rw-r--r-- 1 user user       4096 Mar  3 10:12 notes.txt"""

TIMEIT = "287 µs ± 4.12 µs per loop (mean ± std. dev. of 7 runs, 1,000 loops each)"

PAIRS = [
    pair("describe-bullets", "describe orders.csv", [DESCRIBE],
         "Summary of `orders.csv`:\n\n- **1,200** orders\n- mean price **41.27 EUR** "
         "(median 40.95)\n- prices range from 3.10 to 97.80\n- std ≈ 12.9",),
    pair("describe-wrong", "describe orders.csv", [DESCRIBE],
         "The 1,200 orders average **41.72 EUR**; half cost less than 40.95.",
         planted={"41.72": "transposed"}),
    pair("describe-table", "describe orders.csv", [DESCRIBE],
         "| stat | price |\n|---|---|\n| mean | 41.3 |\n| median | 41.0 |\n| max | 97.8 |",),
    pair("groupby-shares", "revenue by region", [GROUPBY, "share North 0.3895"],
         "North leads with €251,908 (39%), ahead of East at €184,233; all 4 regions "
         "together make €654,496.",
         unprinted=["4", "654,496"]),
    pair("groupby-wrong-sum", "revenue by region", [GROUPBY],
         "North brings in €251.9k and West €98.3k, a gap of €135.6k.",
         planted={"135.6": "head-math"}),
    pair("groupby-millions", "revenue by region", [GROUPBY, "total 654495.58"],
         "Total revenue is about €0.65M; North alone is €0.25 million.",),
    pair("report", "evaluate the model", [REPORT],
         "Accuracy is 88% on 1,070 test rows. Class 1 is harder: recall 0.70, "
         "F1 0.74 (class 0: 0.92).",),
    pair("report-wrong", "evaluate the model", [REPORT],
         "Accuracy is 88%; class 1 recall is 0.07 and precision 0.78.",
         planted={"0.07": "transposed"}),
    pair("report-threshold", "evaluate the model", [REPORT],
         "With the default threshold of 0.5 the model reaches 0.88 accuracy; the 258 "
         "positives are found 70% of the time.",
         unprinted=["0.5"]),
    pair("ols", "regress sales on ads", [OLS],
         "The fit is good (R² = 0.87, n = 365): each extra unit of ads adds **3.21** "
         "sales (95% CI 3.03–3.39), p < 0.001.",
         unprinted=["95%", "0.001"]),
    pair("ols-wrong", "regress sales on ads", [OLS],
         "R² is 0.78 and the ads coefficient 3.21.",
         planted={"0.78": "transposed"}),
    pair("ls", "how big are the files?", [LS],
         "`big.bin` is 1 GiB (1.07 GB), `sample.csv` 50 MiB (52.4 MB) and `notes.txt` 4 kB.",
         ),
    pair("ls-wrong", "how big are the files?", [LS],
         "`sample.csv` is 5.2 MB.", planted={"5.2": "unit-slip"}),
    pair("timeit", "time the function", [TIMEIT],
         "One call takes 287 µs (± 4.12 µs over 7 runs of 1,000 loops), i.e. 0.29 ms.",),
    pair("timeit-wrong", "time the function", [TIMEIT],
         "One call takes 278 µs.", planted={"278": "transposed"}),
    pair("dates", "orders per quarter in 2023", [
        "quarter\n2023Q1    812\n2023Q2    944\n2023Q3   1103\n2023Q4    987"],
         "From 2023-01-01 to 2023-12-31: Q3 2023 was strongest with 1,103 orders, Q1 "
         "weakest with 812.",),
    pair("dates-wrong", "orders per quarter in 2023", [
        "quarter\n2023Q1    812\n2023Q2    944\n2023Q3   1103\n2023Q4    987"],
         "Q2 had 994 orders, Q4 987.", planted={"994": "transposed"}),
    pair("money-cents", "total the invoices", ["total 12345.6749\nn 512"],
         "The 512 invoices total **$12,345.67**.",),
    pair("money-wrong", "total the invoices", ["total 12345.6749\nn 512"],
         "The 512 invoices total $12,354.67.", planted={"12,354.67": "transposed"}),
    pair("european", "Summe der Rechnungen", ["Summe: 1234567.891\nAnzahl: 3406"],
         "Die Summe beträgt 1.234.567,89 € bei 3.406 Rechnungen.",),
    pair("negative", "year over year change", ["change -0.0412\nprev 1820.5\nnow 1745.5"],
         "Sales fell 4.1% (from 1,820.5 to 1,745.5), a change of −0.0412.",),
    pair("negative-wrong", "year over year change", ["change -0.0412\nprev 1820.5\nnow 1745.5"],
         "Sales fell 14%.", planted={"14%": "head-math"}),
    pair("scientific", "p-value of the t-test", ["t=5.21, p=3.18e-07"],
         "The difference is significant: t = 5.21, p = 3.2e-7.",),
    pair("scientific-wrong", "p-value of the t-test", ["t=5.21, p=3.18e-07"],
         "t = 5.12, p = 3.2e-7.", planted={"5.12": "transposed"}),
    pair("user-numbers", "show the top 5 products of 2024 by revenue",
         ["product\nA    9120.5\nB    8800.0\nC    7702.2\nD    6012.9\nE    5800.1"],
         "The top 5 products of 2024 are led by A with 9,120.5; E closes the list at 5,800.1."),
    pair("steps", "clean and count", ["rows before 10000", "rows after 9734"],
         "1. Step 1 loaded 10,000 rows.\n2. Step 2 dropped duplicates, leaving 9,734.\n"
         "3. 266 rows were removed.", unprinted=["266"]),
    pair("approx", "mean session length", ["mean 17.83 minutes\nn 20514"],
         "Sessions last ~18 minutes on average (17.83 min over 20,514 sessions).",),
    pair("approx-wrong", "mean session length", ["mean 17.83 minutes\nn 20514"],
         "Sessions last about 13 minutes.", planted={"13": "invented"}),
    pair("memory", "memory of the frame", ["memory usage: 45.3 MB", "deep: 47500288"],
         "The frame takes 45.3 MB (47,500,288 bytes).",),
    pair("many", "list the first rows",
         ["  id  score\n" + "\n".join(f"{i:4d}  {i * 1.5:.1f}" for i in range(1, 21))],
         "Scores run from 1.5 (id 1) to 30.0 (id 20), rising by 1.5 per row; id 10 has 15.0.",),
    pair("growth", "growth since 2022", ["2022 1520\n2023 1748\ngrowth 0.15"],
         "Users grew 15% from 1,520 in 2022 to 1,748 in 2023.",),
    pair("growth-wrong", "growth since 2022", ["2022 1520\n2023 1748\ngrowth 0.15"],
         "Users grew 51% from 1,520 to 1,748.", planted={"51%": "transposed"}),
    pair("corr", "correlations", ["          a      b\na  1.000 -0.634\nb -0.634  1.000"],
         "a and b are negatively correlated (r = -0.63).",),
    pair("corr-wrong", "correlations", ["          a      b\na  1.000 -0.634\nb -0.634  1.000"],
         "a and b correlate at -0.36.", planted={"-0.36": "transposed"}),
    pair("stale", "how many users now?", ["users 48210"],
         "There are 48,210 users, up from 45,900 last month.",
         planted={"45,900": "other-session"}),
    pair("missing", "missing values", ["age       37\nincome     0\ncity     112\nrows 1000",
                                        "share age 0.037"],
         "`age` has 37 missing values (3.7%), `city` 112 and `income` none.",),
]
