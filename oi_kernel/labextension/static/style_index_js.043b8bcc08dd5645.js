"use strict";(self.rspackChunkoi_kernel=self.rspackChunkoi_kernel||[]).push([["style_index_js"],{"./node_modules/css-loader/dist/cjs.js!./style/index.css"(e,o,t){var r=t("./node_modules/css-loader/dist/runtime/noSourceMaps.js"),i=t.n(r),a=t("./node_modules/css-loader/dist/runtime/api.js"),n=(t.n(a))()(i());n.push([e.id,`/* Open Interpreter for Jupyter (oi-kernel) */

.oi-StatusItem {
  cursor: pointer;
  white-space: nowrap;
  padding: 0 4px;
}

.oi-StatusItem:hover {
  background-color: var(--jp-layout-color2);
}

.oi-VerifyReport {
  max-width: 80vw;
  max-height: 60vh;
  overflow: auto;
}

.oi-VerifyReport-summary {
  font-weight: bold;
}

.oi-VerifyReport-error {
  color: var(--jp-error-color1);
}

.oi-VerifyReport-table {
  border-collapse: collapse;
  margin: 8px 0;
}

.oi-VerifyReport-table th,
.oi-VerifyReport-table td {
  border: 1px solid var(--jp-border-color2);
  padding: 2px 8px;
  text-align: left;
  vertical-align: top;
}

.oi-VerifyReport-different td,
.oi-VerifyReport-error td {
  color: var(--jp-error-color1);
}

.oi-VerifyReport-skipped td {
  color: var(--jp-ui-font-color2);
}

.oi-VerifyReport-text {
  font-family: var(--jp-code-font-family);
  font-size: var(--jp-code-font-size);
  white-space: pre-wrap;
}

/* The approval card (an ipywidgets box rendered by the stock widget manager). */
.oi-card .oi-code textarea {
  font-family: var(--jp-code-font-family);
  font-size: var(--jp-code-font-size);
  line-height: var(--jp-code-line-height);
  color: var(--jp-content-font-color1);
  background: var(--jp-cell-editor-background);
}

.oi-card-pending {
  border-left: 3px solid var(--jp-brand-color1);
  padding-left: 6px;
}

.oi-card-decided pre.oi-code-ran {
  font-family: var(--jp-code-font-family);
  font-size: var(--jp-code-font-size);
  background: var(--jp-cell-editor-background);
  padding: 4px 8px;
  border-radius: 2px;
}

/* The shared approval card (cardview.ts): laid out like the ipywidgets card. */
.oi-card-shared {
  display: flex;
  flex-direction: column;
  gap: 4px;
  padding: 4px 0;
}

.oi-card-shared .oi-code textarea {
  box-sizing: border-box;
  width: 100%;
  font-family: var(--jp-code-font-family);
  font-size: var(--jp-code-font-size);
  resize: vertical;
}

.oi-card-shared .oi-card-buttons {
  display: flex;
  flex-wrap: wrap;
  gap: 4px;
  align-items: center;
}

.oi-card-shared .oi-card-buttons input {
  width: 18em;
}

.oi-card-shared .oi-card-message.oi-four-eyes-refused {
  color: var(--jp-error-color1);
}

.oi-SharedCard-note {
  color: var(--jp-ui-font-color2);
  font-style: italic;
}

/* Cell edits proposed by the model (celledits.ts) */
.oi-CellEdits {
  border: 1px solid var(--jp-border-color2);
  border-left: 3px solid var(--jp-brand-color1);
  padding: 6px 8px;
  margin: 4px 0;
}

.oi-CellEdits-head,
.oi-CellEdits-title {
  font-weight: bold;
  margin: 2px 0 4px;
}

.oi-CellEdits-bar,
.oi-CellEdits-buttons {
  display: flex;
  gap: 6px;
  align-items: center;
  margin: 4px 0;
}

.oi-CellEdits-reason {
  flex: 1;
  min-width: 12em;
}

.oi-CellEdits-edit {
  margin-top: 8px;
}

.oi-CellEdits-diff {
  font-family: var(--jp-code-font-family);
  font-size: var(--jp-code-font-size);
  white-space: pre;
  overflow-x: auto;
  background: var(--jp-layout-color1);
  border: 1px solid var(--jp-border-color3);
}

.oi-diff-add {
  background: rgba(40, 167, 69, 0.18);
}

.oi-diff-del {
  background: rgba(220, 53, 69, 0.18);
}

.oi-diff-side {
  border-collapse: collapse;
  width: 100%;
}

.oi-diff-side td {
  width: 50%;
  vertical-align: top;
  padding: 0 4px;
  border-right: 1px solid var(--jp-border-color3);
}

.oi-CellEdits-status[data-action='accepted'] {
  color: var(--jp-success-color1);
}

.oi-CellEdits-status[data-action='rejected'],
.oi-CellEdits-status[data-action='missing'] {
  color: var(--jp-warn-color1);
}
`,""]),t.d(o,{},{A:n})},"./node_modules/css-loader/dist/runtime/api.js"(e){e.exports=function(e){var o=[];return o.toString=function(){return this.map(function(o){var t="",r=void 0!==o[5];return o[4]&&(t+="@supports (".concat(o[4],") {")),o[2]&&(t+="@media ".concat(o[2]," {")),r&&(t+="@layer".concat(o[5].length>0?" ".concat(o[5]):""," {")),t+=e(o),r&&(t+="}"),o[2]&&(t+="}"),o[4]&&(t+="}"),t}).join("")},o.i=function(e,t,r,i,a){"string"==typeof e&&(e=[[null,e,void 0]]);var n={};if(r)for(var s=0;s<this.length;s++){var d=this[s][0];null!=d&&(n[d]=!0)}for(var l=0;l<e.length;l++){var c=[].concat(e[l]);r&&n[c[0]]||(void 0!==a&&(void 0===c[5]||(c[1]="@layer".concat(c[5].length>0?" ".concat(c[5]):""," {").concat(c[1],"}")),c[5]=a),t&&(c[2]&&(c[1]="@media ".concat(c[2]," {").concat(c[1],"}")),c[2]=t),i&&(c[4]?(c[1]="@supports (".concat(c[4],") {").concat(c[1],"}"),c[4]=i):c[4]="".concat(i)),o.push(c))}},o}},"./node_modules/css-loader/dist/runtime/noSourceMaps.js"(e){e.exports=function(e){return e[1]}},"./node_modules/style-loader/dist/runtime/injectStylesIntoStyleTag.js"(e){var o=[];function t(e){for(var t=-1,r=0;r<o.length;r++)if(o[r].identifier===e){t=r;break}return t}function r(e,r){for(var i={},a=[],n=0;n<e.length;n++){var s=e[n],d=r.base?s[0]+r.base:s[0],l=i[d]||0,c="".concat(d," ").concat(l);i[d]=l+1;var p=t(c),u={css:s[1],media:s[2],sourceMap:s[3],supports:s[4],layer:s[5]};if(-1!==p)o[p].references++,o[p].updater(u);else{var f=function(e,o){var t=o.domAPI(o);return t.update(e),function(o){o?(o.css!==e.css||o.media!==e.media||o.sourceMap!==e.sourceMap||o.supports!==e.supports||o.layer!==e.layer)&&t.update(e=o):t.remove()}}(u,r);r.byIndex=n,o.splice(n,0,{identifier:c,updater:f,references:1})}a.push(c)}return a}e.exports=function(e,i){var a=r(e=e||[],i=i||{});return function(e){e=e||[];for(var n=0;n<a.length;n++){var s=t(a[n]);o[s].references--}for(var d=r(e,i),l=0;l<a.length;l++){var c=t(a[l]);0===o[c].references&&(o[c].updater(),o.splice(c,1))}a=d}}},"./node_modules/style-loader/dist/runtime/insertBySelector.js"(e){var o={};e.exports=function(e,t){var r=function(e){if(void 0===o[e]){var t=document.querySelector(e);if(window.HTMLIFrameElement&&t instanceof window.HTMLIFrameElement)try{t=t.contentDocument.head}catch(e){t=null}o[e]=t}return o[e]}(e);if(!r)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");r.appendChild(t)}},"./node_modules/style-loader/dist/runtime/insertStyleElement.js"(e){e.exports=function(e){var o=document.createElement("style");return e.setAttributes(o,e.attributes),e.insert(o,e.options),o}},"./node_modules/style-loader/dist/runtime/setAttributesWithoutAttributes.js"(e,o,t){e.exports=function(e){var o=t.nc;o&&e.setAttribute("nonce",o)}},"./node_modules/style-loader/dist/runtime/styleDomAPI.js"(e){e.exports=function(e){if("u"<typeof document)return{update:function(){},remove:function(){}};var o=e.insertStyleElement(e);return{update:function(t){var r,i,a;r="",t.supports&&(r+="@supports (".concat(t.supports,") {")),t.media&&(r+="@media ".concat(t.media," {")),(i=void 0!==t.layer)&&(r+="@layer".concat(t.layer.length>0?" ".concat(t.layer):""," {")),r+=t.css,i&&(r+="}"),t.media&&(r+="}"),t.supports&&(r+="}"),(a=t.sourceMap)&&"u">typeof btoa&&(r+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(a))))," */")),e.styleTagTransform(r,o,e.options)},remove:function(){var e;null===(e=o).parentNode||e.parentNode.removeChild(e)}}}},"./node_modules/style-loader/dist/runtime/styleTagTransform.js"(e){e.exports=function(e,o){if(o.styleSheet)o.styleSheet.cssText=e;else{for(;o.firstChild;)o.removeChild(o.firstChild);o.appendChild(document.createTextNode(e))}}},"./style/index.js"(e,o,t){var r=t("./node_modules/style-loader/dist/runtime/injectStylesIntoStyleTag.js"),i=t.n(r),a=t("./node_modules/style-loader/dist/runtime/styleDomAPI.js"),n=t.n(a),s=t("./node_modules/style-loader/dist/runtime/insertBySelector.js"),d=t.n(s),l=t("./node_modules/style-loader/dist/runtime/setAttributesWithoutAttributes.js"),c=t.n(l),p=t("./node_modules/style-loader/dist/runtime/insertStyleElement.js"),u=t.n(p),f=t("./node_modules/style-loader/dist/runtime/styleTagTransform.js"),m=t.n(f),y=t("./node_modules/css-loader/dist/cjs.js!./style/index.css"),v={};v.styleTagTransform=m(),v.setAttributes=c(),v.insert=d().bind(null,"head"),v.domAPI=n(),v.insertStyleElement=u(),i()(y.A,v),y.A&&y.A.locals&&y.A.locals}}]);