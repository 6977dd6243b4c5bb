# Strings, regular expressions, JSON and CSV handling, dates, encodings.
#%%
import json
payload = json.loads(raw_text)
payload.keys()
#%%
import json
print(json.dumps(record, indent=2, ensure_ascii=False))
#%%
import re
emails = re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", text)
len(set(emails))
#%%
import re
df["phone"] = df["phone"].str.replace(r"\D", "", regex=True)
#%%
words = text.lower().split()
from collections import Counter
Counter(words).most_common(20)
#%%
import string
clean = text.translate(str.maketrans("", "", string.punctuation))
#%%
import unicodedata
norm = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
#%%
s = "  Hello, World  "
s.strip().lower().replace(",", "")
#%%
from datetime import datetime, timedelta
now = datetime.now()
week_ago = now - timedelta(days=7)
week_ago.strftime("%Y-%m-%d")
#%%
from dateutil import parser
parser.parse("March 3, 2024 5pm")
#%%
import base64
with open("figures/chart.png", "rb") as f:
    encoded = base64.b64encode(f.read()).decode("ascii")
html = f'<img src="data:image/png;base64,{encoded}">'
#%%
import base64
token = base64.urlsafe_b64encode(b"user:42").decode()
base64.urlsafe_b64decode(token)
#%%
from IPython.display import HTML, Markdown, display
display(Markdown(f"**Total revenue:** {total:,.0f}"))
#%%
import textwrap
print(textwrap.fill(long_text, width=80))
#%%
import csv
with open("output/rows.csv", "a", newline="") as f:
    csv.writer(f).writerows(rows)
#%%
import difflib
difflib.get_close_matches("Londn", cities, n=3)
#%%
names = [n.title() for n in raw_names if n and not n.isspace()]
#%%
f"{value:.2%} of {count:,} rows"
#%%
pattern = re.compile(r"(?P<year>\d{4})-(?P<month>\d{2})")
m = pattern.search("report 2024-06 final")
m.group("year"), m.group("month")
#%%
import json
records = [json.loads(line) for line in open("data/events.jsonl")]
#%%
from collections import defaultdict
by_user = defaultdict(list)
for e in events:
    by_user[e["user"]].append(e["ts"])
#%%
from urllib.parse import urlparse, parse_qs
parts = urlparse(link)
params = parse_qs(parts.query)
#%%
df["domain"] = df["url"].map(lambda u: urlparse(u).netloc)
#%%
links = [l for l in df["url"] if l.startswith("https://")]
len(links)
#%%
sources = {"census": "https://www.census.gov/data.html", "bls": "https://www.bls.gov/data/"}
for name, link in sources.items():
    print(f"{name}: {link}")
#%%
import html
html.escape("<b>5 > 3</b>")
#%%
import hashlib
df["user_hash"] = df["email"].map(lambda e: hashlib.md5(e.encode()).hexdigest())
#%%
text.encode("utf-8").decode("latin-1")
#%%
raw = open("data/legacy.txt", "rb").read()
text = raw.decode("cp1252")
#%%
import locale
"{:n}".format(1234567)
#%%
tokens = [t for t in re.split(r"\W+", doc.lower()) if len(t) > 2]
#%%
from string import Template
msg = Template("Hello $name, your total is $total").substitute(name=n, total=t)
#%%
import json
pretty = json.dumps(json.loads(compact), sort_keys=True, indent=4)
#%%
s = "a,b;c d"
re.split(r"[,; ]", s)
#%%
import calendar
calendar.month_name[3], calendar.monthrange(2024, 2)
#%%
slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
#%%
import uuid
run_id = uuid.uuid4().hex[:8]
#%%
ascii_art = "\n".join("#" * n for n in range(1, 6))
print(ascii_art)
#%%
import json
from datetime import date
json.dumps({"day": date.today()}, default=str)
#%%
df["text_len"] = df["review"].str.len()
df["n_words"] = df["review"].str.split().str.len()
#%%
print("Docs: see https://pandas.pydata.org/docs/ for details")
#%%
import zlib
crc = zlib.crc32(data_bytes)
#%%
import codecs
with codecs.open("data/utf16.txt", encoding="utf-16") as f:
    content = f.read()
