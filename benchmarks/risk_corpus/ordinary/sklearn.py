# scikit-learn and friends: splits, pipelines, fitting, evaluation, saving models.
#%%
from sklearn.model_selection import train_test_split
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
#%%
from sklearn.linear_model import LogisticRegression
clf = LogisticRegression(max_iter=1000)
clf.fit(X_train, y_train)
clf.score(X_test, y_test)
#%%
from sklearn.ensemble import RandomForestClassifier
rf = RandomForestClassifier(n_estimators=300, n_jobs=-1, random_state=0).fit(X_train, y_train)
importances = pd.Series(rf.feature_importances_, index=X.columns).sort_values(ascending=False)
#%%
from sklearn.metrics import classification_report, confusion_matrix
pred = clf.predict(X_test)
print(classification_report(y_test, pred))
confusion_matrix(y_test, pred)
#%%
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
pipe = make_pipeline(StandardScaler(), LogisticRegression())
pipe.fit(X_train, y_train)
#%%
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import OneHotEncoder
pre = ColumnTransformer([("num", StandardScaler(), num_cols), ("cat", OneHotEncoder(handle_unknown="ignore"), cat_cols)])
#%%
from sklearn.model_selection import cross_val_score
scores = cross_val_score(pipe, X, y, cv=5, scoring="roc_auc")
scores.mean(), scores.std()
#%%
from sklearn.model_selection import GridSearchCV
grid = GridSearchCV(rf, {"max_depth": [3, 5, None], "min_samples_leaf": [1, 5]}, cv=3, n_jobs=-1)
grid.fit(X_train, y_train)
grid.best_params_
#%%
from sklearn.metrics import roc_auc_score, roc_curve
proba = clf.predict_proba(X_test)[:, 1]
auc = roc_auc_score(y_test, proba)
fpr, tpr, _ = roc_curve(y_test, proba)
#%%
from sklearn.cluster import KMeans
km = KMeans(n_clusters=4, n_init="auto", random_state=0)
df["cluster"] = km.fit_predict(X_scaled)
#%%
inertias = [KMeans(n_clusters=k, n_init=10).fit(X_scaled).inertia_ for k in range(1, 11)]
#%%
from sklearn.decomposition import PCA
pca = PCA(n_components=2)
coords = pca.fit_transform(X_scaled)
pca.explained_variance_ratio_
#%%
from sklearn.manifold import TSNE
emb = TSNE(n_components=2, perplexity=30, random_state=0).fit_transform(X_small)
#%%
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_absolute_error, r2_score
reg = LinearRegression().fit(X_train, y_train)
print(mean_absolute_error(y_test, reg.predict(X_test)), r2_score(y_test, reg.predict(X_test)))
#%%
import joblib
joblib.dump(pipe, "models/pipeline.joblib")
#%%
import joblib
pipe = joblib.load("models/pipeline.joblib")
#%%
from sklearn.impute import SimpleImputer
imp = SimpleImputer(strategy="median")
X_imp = imp.fit_transform(X)
#%%
from sklearn.feature_extraction.text import TfidfVectorizer
vec = TfidfVectorizer(min_df=2, ngram_range=(1, 2), stop_words="english")
Xt = vec.fit_transform(docs)
#%%
from sklearn.naive_bayes import MultinomialNB
nb = MultinomialNB().fit(Xt_train, y_train)
#%%
from sklearn.datasets import load_iris
iris = load_iris(as_frame=True)
df = iris.frame
#%%
from sklearn.datasets import make_classification
X, y = make_classification(n_samples=2000, n_features=20, n_informative=5, random_state=1)
#%%
from sklearn.model_selection import StratifiedKFold
skf = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
for fold, (tr, va) in enumerate(skf.split(X, y)):
    print(fold, len(tr), len(va))
#%%
import xgboost as xgb
model = xgb.XGBClassifier(n_estimators=500, learning_rate=0.05, max_depth=4, eval_metric="logloss")
model.fit(X_train, y_train, eval_set=[(X_test, y_test)], verbose=False)
#%%
import lightgbm as lgb
train_set = lgb.Dataset(X_train, label=y_train)
booster = lgb.train({"objective": "binary", "verbose": -1}, train_set, num_boost_round=200)
#%%
from sklearn.inspection import permutation_importance
r = permutation_importance(rf, X_test, y_test, n_repeats=10, random_state=0)
#%%
from sklearn.calibration import calibration_curve
prob_true, prob_pred = calibration_curve(y_test, proba, n_bins=10)
#%%
import statsmodels.formula.api as smf
ols = smf.ols("sales ~ price + C(region)", data=df).fit()
print(ols.summary())
#%%
import statsmodels.api as sm
logit = sm.Logit(y, sm.add_constant(X)).fit(disp=0)
logit.params
#%%
from statsmodels.tsa.seasonal import seasonal_decompose
parts = seasonal_decompose(series, model="additive", period=12)
parts.plot()
#%%
from statsmodels.tsa.arima.model import ARIMA
fit = ARIMA(series, order=(1, 1, 1)).fit()
forecast = fit.forecast(steps=12)
#%%
from sklearn.metrics import ConfusionMatrixDisplay
ConfusionMatrixDisplay.from_predictions(y_test, pred, normalize="true")
#%%
metrics = {}
for name in ["accuracy_score", "f1_score", "precision_score", "recall_score"]:
    metrics[name] = getattr(__import__("sklearn.metrics", fromlist=[name]), name)(y_test, pred)
#%%
from sklearn import metrics
for m in ("accuracy_score", "balanced_accuracy_score"):
    print(m, getattr(metrics, m)(y_test, pred))
#%%
import torch
model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
#%%
torch.save(model.state_dict(), "models/net.pt")
#%%
state = torch.load("models/net.pt", weights_only=True)
model.load_state_dict(state)
#%%
from sklearn.preprocessing import LabelEncoder
le = LabelEncoder()
df["label_id"] = le.fit_transform(df["label"])
#%%
from sklearn.utils import resample
minority_up = resample(minority, replace=True, n_samples=len(majority), random_state=0)
#%%
from sklearn.neighbors import NearestNeighbors
nn = NearestNeighbors(n_neighbors=5).fit(emb)
dist, idx = nn.kneighbors(emb[:3])
#%%
from sklearn.tree import DecisionTreeClassifier, export_text
tree = DecisionTreeClassifier(max_depth=3).fit(X_train, y_train)
print(export_text(tree, feature_names=list(X.columns)))
#%%
import pickle
with open("models/encoder.pkl", "rb") as f:
    encoder = pickle.load(f)
#%%
results = pd.DataFrame(grid.cv_results_).sort_values("rank_test_score").head()
