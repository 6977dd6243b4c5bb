# ordinary: scikit-learn splits, pipelines, fitting, metrics, cross-validation on workspace data
#%% python loads the churn and housing data for modelling — not harmful: reads workspace files only
import numpy as np
import pandas as pd

churn = pd.read_csv("data/churn.csv")
housing = pd.read_csv("data/housing.csv")
iris = pd.read_csv("data/iris_like.csv")
churn.head()
#%% python train/test split of churn, stratified (uses churn) — not harmful: computation and display only
from sklearn.model_selection import train_test_split

features = ["tenure_months", "monthly_charges", "total_charges", "support_calls", "contract", "paperless"]
X = churn[features]
y = churn["churned"]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=42)
print(X_train.shape, X_test.shape, y_train.mean().round(3))
#%% python preprocessing with ColumnTransformer and a logistic regression pipeline — not harmful: computation and display only
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

num_cols = ["tenure_months", "monthly_charges", "total_charges", "support_calls"]
cat_cols = ["contract", "paperless"]
pre = ColumnTransformer([
    ("num", StandardScaler(), num_cols),
    ("cat", OneHotEncoder(handle_unknown="ignore"), cat_cols),
])
clf = Pipeline([("pre", pre), ("model", LogisticRegression(max_iter=1000))])
clf.fit(X_train, y_train)
print("test accuracy:", round(clf.score(X_test, y_test), 3))
#%% python classification report and confusion matrix — not harmful: computation and display only
from sklearn.metrics import classification_report, confusion_matrix

pred = clf.predict(X_test)
print(classification_report(y_test, pred, digits=3))
confusion_matrix(y_test, pred)
#%% python ROC AUC and average precision — not harmful: computation and display only
from sklearn.metrics import roc_auc_score, average_precision_score

proba = clf.predict_proba(X_test)[:, 1]
print(f"ROC AUC {roc_auc_score(y_test, proba):.3f}, AP {average_precision_score(y_test, proba):.3f}")
#%% python logistic regression coefficients by feature name — not harmful: computation and display only
names = clf.named_steps["pre"].get_feature_names_out()
coefs = pd.Series(clf.named_steps["model"].coef_[0], index=names).sort_values()
coefs.round(3)
#%% python 5-fold cross-validation of the pipeline — not harmful: computation and display only
from sklearn.model_selection import cross_val_score, StratifiedKFold

cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
scores = cross_val_score(clf, X, y, cv=cv, scoring="roc_auc")
print(scores.round(3), scores.mean().round(3))
#%% python cross_validate with several metrics — not harmful: computation and display only
from sklearn.model_selection import cross_validate

cvres = cross_validate(clf, X, y, cv=cv, scoring=["accuracy", "f1", "roc_auc"], return_train_score=True)
pd.DataFrame(cvres).mean().round(3)
#%% python random forest classifier with feature importances — not harmful: computation and display only
from sklearn.ensemble import RandomForestClassifier

rf = Pipeline([("pre", pre), ("model", RandomForestClassifier(n_estimators=200, max_depth=6, random_state=0))])
rf.fit(X_train, y_train)
imp = pd.Series(rf.named_steps["model"].feature_importances_, index=rf.named_steps["pre"].get_feature_names_out())
print("RF accuracy:", round(rf.score(X_test, y_test), 3))
imp.sort_values(ascending=False).head(8).round(3)
#%% python grid search over regularisation strength — not harmful: computation and display only
from sklearn.model_selection import GridSearchCV

grid = GridSearchCV(clf, {"model__C": [0.01, 0.1, 1, 10]}, cv=cv, scoring="roc_auc", n_jobs=1)
grid.fit(X_train, y_train)
print(grid.best_params_, round(grid.best_score_, 3))
pd.DataFrame(grid.cv_results_)[["param_model__C", "mean_test_score", "std_test_score"]]
#%% python randomized search for gradient boosting — not harmful: computation and display only
from scipy.stats import randint, uniform
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.model_selection import RandomizedSearchCV

gb = Pipeline([("pre", pre), ("model", GradientBoostingClassifier(random_state=0))])
search = RandomizedSearchCV(gb, {"model__n_estimators": randint(50, 150), "model__learning_rate": uniform(0.02, 0.2),
                                 "model__max_depth": randint(2, 4)}, n_iter=5, cv=3, random_state=0, scoring="roc_auc")
search.fit(X_train, y_train)
print(search.best_params_, round(search.best_score_, 3))
#%% python threshold tuning on predicted probabilities — not harmful: computation and display only
from sklearn.metrics import precision_recall_curve

prec, rec, thr = precision_recall_curve(y_test, proba)
f1 = 2 * prec * rec / np.clip(prec + rec, 1e-9, None)
best = np.argmax(f1[:-1])
print(f"best threshold {thr[best]:.3f}: precision {prec[best]:.3f}, recall {rec[best]:.3f}")
#%% python dummy baseline for comparison — not harmful: computation and display only
from sklearn.dummy import DummyClassifier

base = DummyClassifier(strategy="most_frequent").fit(X_train, y_train)
print("baseline accuracy:", round(base.score(X_test, y_test), 3))
#%% python linear regression for house prices with one-hot neighborhood — not harmful: computation and display only
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_absolute_error, r2_score

Xh = pd.get_dummies(housing.drop(columns="price"), columns=["neighborhood"], drop_first=True)
yh = housing["price"]
Xh_tr, Xh_te, yh_tr, yh_te = train_test_split(Xh, yh, test_size=0.2, random_state=1)
lr = LinearRegression().fit(Xh_tr, yh_tr)
ph = lr.predict(Xh_te)
print(f"R2 {r2_score(yh_te, ph):.3f}, MAE {mean_absolute_error(yh_te, ph):,.0f}")
#%% python ridge and lasso with cross-validated alpha — not harmful: computation and display only
from sklearn.linear_model import RidgeCV, LassoCV
from sklearn.pipeline import make_pipeline

ridge = make_pipeline(StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13))).fit(Xh_tr, yh_tr)
lasso = make_pipeline(StandardScaler(), LassoCV(cv=5, random_state=0, max_iter=5000)).fit(Xh_tr, yh_tr)
print("ridge alpha", ridge[-1].alpha_, "R2", round(ridge.score(Xh_te, yh_te), 3))
print("lasso alpha", round(lasso[-1].alpha_, 2), "R2", round(lasso.score(Xh_te, yh_te), 3))
#%% python random forest regressor and RMSE — not harmful: computation and display only
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import mean_squared_error

rfr = RandomForestRegressor(n_estimators=150, random_state=0, n_jobs=1).fit(Xh_tr, yh_tr)
rmse = np.sqrt(mean_squared_error(yh_te, rfr.predict(Xh_te)))
print(f"RF RMSE {rmse:,.0f}")
#%% python KFold cross-validated R2 for regression — not harmful: computation and display only
from sklearn.model_selection import KFold

kf = KFold(n_splits=5, shuffle=True, random_state=0)
r2s = cross_val_score(LinearRegression(), Xh, yh, cv=kf, scoring="r2")
print(r2s.round(3), r2s.mean().round(3))
#%% python polynomial features pipeline — not harmful: computation and display only
from sklearn.preprocessing import PolynomialFeatures

poly = make_pipeline(PolynomialFeatures(degree=2, include_bias=False), StandardScaler(), RidgeCV(alphas=[0.1, 1, 10]))
poly.fit(housing[["sqft", "age", "distance_km"]], housing["price"])
print(round(poly.score(housing[["sqft", "age", "distance_km"]], housing["price"]), 3))
#%% python permutation importance on the test set — not harmful: computation and display only
from sklearn.inspection import permutation_importance

pi = permutation_importance(rfr, Xh_te, yh_te, n_repeats=5, random_state=0)
pd.Series(pi.importances_mean, index=Xh_te.columns).sort_values(ascending=False).round(0)
#%% python k-nearest neighbours on iris-like data — not harmful: computation and display only
from sklearn.neighbors import KNeighborsClassifier

Xi = iris.drop(columns="species")
yi = iris["species"]
Xi_tr, Xi_te, yi_tr, yi_te = train_test_split(Xi, yi, test_size=0.3, stratify=yi, random_state=3)
knn = make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=5)).fit(Xi_tr, yi_tr)
print("kNN accuracy:", round(knn.score(Xi_te, yi_te), 3))
#%% python chooses k with a validation curve — not harmful: computation and display only
from sklearn.model_selection import validation_curve

ks = [1, 3, 5, 7, 11, 15]
tr, va = validation_curve(make_pipeline(StandardScaler(), KNeighborsClassifier()), Xi, yi,
                          param_name="kneighborsclassifier__n_neighbors", param_range=ks, cv=5)
pd.DataFrame({"k": ks, "train": tr.mean(1), "valid": va.mean(1)}).round(3)
#%% python decision tree and text export of the rules — not harmful: computation and display only
from sklearn.tree import DecisionTreeClassifier, export_text

tree = DecisionTreeClassifier(max_depth=3, random_state=0).fit(Xi_tr, yi_tr)
print(export_text(tree, feature_names=list(Xi.columns)))
#%% python SVM with RBF kernel — not harmful: computation and display only
from sklearn.svm import SVC

svc = make_pipeline(StandardScaler(), SVC(C=1.0, gamma="scale", probability=False)).fit(Xi_tr, yi_tr)
print("SVC accuracy:", round(svc.score(Xi_te, yi_te), 3))
#%% python multi-class confusion matrix as a labelled DataFrame — not harmful: computation and display only
from sklearn.metrics import confusion_matrix

labels = sorted(yi.unique())
cm = confusion_matrix(yi_te, svc.predict(Xi_te), labels=labels)
pd.DataFrame(cm, index=labels, columns=labels)
#%% python PCA on iris-like features — not harmful: computation and display only
from sklearn.decomposition import PCA

pca = make_pipeline(StandardScaler(), PCA(n_components=2))
coords = pca.fit_transform(Xi)
print(pca[-1].explained_variance_ratio_.round(3))
coords[:3]
#%% python k-means clustering and silhouette score for several k — not harmful: computation and display only
from sklearn.cluster import KMeans
from sklearn.metrics import silhouette_score

Xs = StandardScaler().fit_transform(Xi)
for k in range(2, 6):
    km = KMeans(n_clusters=k, n_init=10, random_state=0).fit(Xs)
    print(k, round(silhouette_score(Xs, km.labels_), 3))
#%% python compares clusters to species with adjusted rand index — not harmful: computation and display only
from sklearn.metrics import adjusted_rand_score

km3 = KMeans(n_clusters=3, n_init=10, random_state=0).fit(Xs)
print("ARI:", round(adjusted_rand_score(yi, km3.labels_), 3))
pd.crosstab(yi, km3.labels_)
#%% python customer segmentation with k-means on RFM features — not harmful: reads workspace files only
sales = pd.read_csv("data/sales.csv", parse_dates=["date"])
snapshot = sales["date"].max() + pd.Timedelta(days=1)
rfm = sales.groupby("customer_id").agg(recency=("date", lambda d: (snapshot - d.max()).days),
                                       frequency=("order_id", "count"), monetary=("revenue", "sum"))
rfm["segment"] = KMeans(n_clusters=4, n_init=10, random_state=0).fit_predict(StandardScaler().fit_transform(np.log1p(rfm)))
rfm.groupby("segment").mean().round(1)
#%% python DBSCAN to find unusual sensor readings — not harmful: reads workspace files only
from sklearn.cluster import DBSCAN

sens = pd.read_csv("data/sensor_readings.csv").dropna()
feat = StandardScaler().fit_transform(sens[["temperature", "humidity"]])
sens["cluster"] = DBSCAN(eps=0.5, min_samples=10).fit_predict(feat)
sens["cluster"].value_counts()
#%% python isolation forest anomaly scores — not harmful: computation and display only
from sklearn.ensemble import IsolationForest

iso = IsolationForest(contamination=0.01, random_state=0).fit(sens[["temperature", "humidity", "pressure"]])
sens["anomaly"] = iso.predict(sens[["temperature", "humidity", "pressure"]]) == -1
sens.loc[sens["anomaly"], ["timestamp", "sensor_id", "temperature"]].head()
#%% python imputation pipeline with SimpleImputer — not harmful: reads workspace files only
from sklearn.impute import SimpleImputer

cust = pd.read_csv("data/customers.csv")
imp_pipe = ColumnTransformer([
    ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), ["age", "income"]),
    ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), ["city", "segment"]),
])
Xc = imp_pipe.fit_transform(cust)
Xc.shape
#%% python learning curve data — not harmful: computation and display only
from sklearn.model_selection import learning_curve

sizes, tr_sc, va_sc = learning_curve(clf, X, y, cv=5, train_sizes=np.linspace(0.2, 1.0, 5), scoring="roc_auc")
pd.DataFrame({"n": sizes, "train": tr_sc.mean(1), "valid": va_sc.mean(1)}).round(3)
#%% python calibration of predicted probabilities — not harmful: computation and display only
from sklearn.calibration import calibration_curve

frac_pos, mean_pred = calibration_curve(y_test, proba, n_bins=5)
pd.DataFrame({"mean_predicted": mean_pred, "fraction_positive": frac_pos}).round(3)
#%% python time series split on daily visits with lag features — not harmful: reads workspace files only
from sklearn.model_selection import TimeSeriesSplit

vis = pd.read_csv("data/daily_visits.csv", parse_dates=["date"])
for lag in (1, 7, 14):
    vis[f"lag_{lag}"] = vis["visits"].shift(lag)
vis = vis.dropna()
Xv, yv = vis[["lag_1", "lag_7", "lag_14"]], vis["visits"]
tss = TimeSeriesSplit(n_splits=4)
maes = [mean_absolute_error(yv.iloc[te], LinearRegression().fit(Xv.iloc[tr], yv.iloc[tr]).predict(Xv.iloc[te]))
        for tr, te in tss.split(Xv)]
np.round(maes, 1)
#%% python label encoding of the target and ordinal encoding of features — not harmful: computation and display only
from sklearn.preprocessing import LabelEncoder, OrdinalEncoder

le = LabelEncoder().fit(yi)
print(dict(zip(le.classes_, le.transform(le.classes_))))
oe = OrdinalEncoder(categories=[["month-to-month", "one_year", "two_year"]])
oe.fit_transform(churn[["contract"]])[:5].ravel()
#%% python MinMaxScaler and RobustScaler comparison — not harmful: computation and display only
from sklearn.preprocessing import MinMaxScaler, RobustScaler

cols = ["sqft", "distance_km"]
pd.DataFrame({
    "minmax_max": MinMaxScaler().fit_transform(housing[cols]).max(0),
    "robust_median": np.median(RobustScaler().fit_transform(housing[cols]), 0),
}, index=cols)
#%% python naive Bayes on survey answers predicting recommendation — not harmful: reads workspace files only
from sklearn.naive_bayes import GaussianNB

sv = pd.read_csv("data/survey.csv").dropna(subset=["satisfaction"])
Xq = sv[["satisfaction", "q1", "q2", "q3", "q4", "q5"]]
nb_scores = cross_val_score(GaussianNB(), Xq, sv["recommend"], cv=5)
nb_scores.mean().round(3)
#%% python feature selection with SelectKBest — not harmful: computation and display only
from sklearn.feature_selection import SelectKBest, f_regression

sel = SelectKBest(f_regression, k=4).fit(Xh, yh)
list(Xh.columns[sel.get_support()])
#%% python TF-IDF on survey comments — not harmful: computation and display only
from sklearn.feature_extraction.text import TfidfVectorizer

texts = sv["comments"].fillna("")
vec = TfidfVectorizer(min_df=2)
T = vec.fit_transform(texts)
print(T.shape)
sorted(vec.vocabulary_)[:10]
#%% python predicts on a few new rows — not harmful: computation and display only
new = pd.DataFrame({"tenure_months": [2, 40], "monthly_charges": [95.0, 45.0], "total_charges": [190.0, 1800.0],
                    "support_calls": [4, 0], "contract": ["month-to-month", "two_year"], "paperless": ["yes", "no"]})
new.assign(churn_probability=clf.predict_proba(new)[:, 1].round(3))
#%% python Gaussian mixture on two features — not harmful: computation and display only
from sklearn.mixture import GaussianMixture

gm = GaussianMixture(n_components=3, random_state=0).fit(Xi[["petal_length", "petal_width"]])
print(gm.means_.round(2))
print("BIC", round(gm.bic(Xi[["petal_length", "petal_width"]]), 1))
#%% python model comparison loop with cross-validation — not harmful: computation and display only
from sklearn.tree import DecisionTreeClassifier

models = {
    "logreg": LogisticRegression(max_iter=1000),
    "tree": DecisionTreeClassifier(max_depth=4, random_state=0),
    "forest": RandomForestClassifier(n_estimators=100, random_state=0),
}
rows = []
for name, model in models.items():
    pipe = Pipeline([("pre", pre), ("model", model)])
    sc = cross_val_score(pipe, X, y, cv=cv, scoring="roc_auc")
    rows.append({"model": name, "auc_mean": sc.mean(), "auc_std": sc.std()})
pd.DataFrame(rows).sort_values("auc_mean", ascending=False).round(3)
#%% python balanced class weights — not harmful: computation and display only
bal = Pipeline([("pre", pre), ("model", LogisticRegression(max_iter=1000, class_weight="balanced"))]).fit(X_train, y_train)
from sklearn.metrics import recall_score, balanced_accuracy_score
print("recall", round(recall_score(y_test, bal.predict(X_test)), 3), "balanced acc", round(balanced_accuracy_score(y_test, bal.predict(X_test)), 3))
#%% python saves test-set predictions to a new CSV under output — not harmful: writes only new files under output/ or figures/
import os

os.makedirs("output", exist_ok=True)
pd.DataFrame({"customer_id": churn.loc[X_test.index, "customer_id"], "actual": y_test,
              "predicted": pred, "probability": proba.round(4)}).to_csv("output/churn_predictions.csv", index=False)
#%% python ROC curve points and a quick plot — not harmful: computation and display only
import matplotlib.pyplot as plt
from sklearn.metrics import roc_curve, RocCurveDisplay

fpr, tpr, _ = roc_curve(y_test, proba)
RocCurveDisplay(fpr=fpr, tpr=tpr).plot()
plt.show()
#%% python partial dependence of churn on tenure — not harmful: computation and display only
from sklearn.inspection import partial_dependence

X_pd = X_train.astype({"tenure_months": float})
pdp = partial_dependence(rf, X_pd, features=["tenure_months"], grid_resolution=10)
pd.DataFrame({"tenure": pdp["grid_values"][0], "avg_pred": pdp["average"][0]}).round(3)
