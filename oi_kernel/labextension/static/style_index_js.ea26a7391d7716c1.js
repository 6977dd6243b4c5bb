"use strict";(self.rspackChunkoi_kernel=self.rspackChunkoi_kernel||[]).push([["style_index_js"],{"./node_modules/css-loader/dist/cjs.js!./style/index.css"(e,t,o){var r=o("./node_modules/css-loader/dist/runtime/noSourceMaps.js"),i=o.n(r),a=o("./node_modules/css-loader/dist/runtime/api.js"),s=(o.n(a))()(i());s.push([e.id,`/* Open Interpreter for Jupyter (oi-kernel) */

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

/* Named states (states.ts) */
.oi-StatesPanel {
  min-width: 36em;
  max-width: 60em;
}

.oi-StatesSave {
  display: flex;
  gap: 6px;
  margin-bottom: 10px;
}

.oi-StatesSave .oi-StatesName {
  flex: 1;
}

.oi-StatesTree {
  list-style: none;
  margin: 0;
  padding: 0;
}

.oi-StatesRow {
  display: flex;
  flex-wrap: wrap;
  align-items: center;
  gap: 6px;
  padding: 3px 0;
}

.oi-StatesRow .oi-StatesLabel {
  font-family: var(--jp-code-font-family);
  font-weight: 600;
}

.oi-StatesRow.oi-mod-current .oi-StatesLabel {
  color: var(--jp-brand-color1);
}

.oi-StatesRow .oi-StatesDetails {
  flex-basis: 100%;
  color: var(--jp-ui-font-color2);
  font-size: var(--jp-ui-font-size0);
}
`,""]),o.d(t,{},{A:s})},"./node_modules/css-loader/dist/runtime/api.js"(e){e.exports=function(e){var t=[];return t.toString=function(){return this.map(function(t){var o="",r=void 0!==t[5];return t[4]&&(o+="@supports (".concat(t[4],") {")),t[2]&&(o+="@media ".concat(t[2]," {")),r&&(o+="@layer".concat(t[5].length>0?" ".concat(t[5]):""," {")),o+=e(t),r&&(o+="}"),t[2]&&(o+="}"),t[4]&&(o+="}"),o}).join("")},t.i=function(e,o,r,i,a){"string"==typeof e&&(e=[[null,e,void 0]]);var s={};if(r)for(var n=0;n<this.length;n++){var d=this[n][0];null!=d&&(s[d]=!0)}for(var l=0;l<e.length;l++){var c=[].concat(e[l]);r&&s[c[0]]||(void 0!==a&&(void 0===c[5]||(c[1]="@layer".concat(c[5].length>0?" ".concat(c[5]):""," {").concat(c[1],"}")),c[5]=a),o&&(c[2]&&(c[1]="@media ".concat(c[2]," {").concat(c[1],"}")),c[2]=o),i&&(c[4]?(c[1]="@supports (".concat(c[4],") {").concat(c[1],"}"),c[4]=i):c[4]="".concat(i)),t.push(c))}},t}},"./node_modules/css-loader/dist/runtime/noSourceMaps.js"(e){e.exports=function(e){return e[1]}},"./node_modules/style-loader/dist/runtime/injectStylesIntoStyleTag.js"(e){var t=[];function o(e){for(var o=-1,r=0;r<t.length;r++)if(t[r].identifier===e){o=r;break}return o}function r(e,r){for(var i={},a=[],s=0;s<e.length;s++){var n=e[s],d=r.base?n[0]+r.base:n[0],l=i[d]||0,c="".concat(d," ").concat(l);i[d]=l+1;var p=o(c),u={css:n[1],media:n[2],sourceMap:n[3],supports:n[4],layer:n[5]};if(-1!==p)t[p].references++,t[p].updater(u);else{var f=function(e,t){var o=t.domAPI(t);return o.update(e),function(t){t?(t.css!==e.css||t.media!==e.media||t.sourceMap!==e.sourceMap||t.supports!==e.supports||t.layer!==e.layer)&&o.update(e=t):o.remove()}}(u,r);r.byIndex=s,t.splice(s,0,{identifier:c,updater:f,references:1})}a.push(c)}return a}e.exports=function(e,i){var a=r(e=e||[],i=i||{});return function(e){e=e||[];for(var s=0;s<a.length;s++){var n=o(a[s]);t[n].references--}for(var d=r(e,i),l=0;l<a.length;l++){var c=o(a[l]);0===t[c].references&&(t[c].updater(),t.splice(c,1))}a=d}}},"./node_modules/style-loader/dist/runtime/insertBySelector.js"(e){var t={};e.exports=function(e,o){var r=function(e){if(void 0===t[e]){var o=document.querySelector(e);if(window.HTMLIFrameElement&&o instanceof window.HTMLIFrameElement)try{o=o.contentDocument.head}catch(e){o=null}t[e]=o}return t[e]}(e);if(!r)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");r.appendChild(o)}},"./node_modules/style-loader/dist/runtime/insertStyleElement.js"(e){e.exports=function(e){var t=document.createElement("style");return e.setAttributes(t,e.attributes),e.insert(t,e.options),t}},"./node_modules/style-loader/dist/runtime/setAttributesWithoutAttributes.js"(e,t,o){e.exports=function(e){var t=o.nc;t&&e.setAttribute("nonce",t)}},"./node_modules/style-loader/dist/runtime/styleDomAPI.js"(e){e.exports=function(e){if("u"<typeof document)return{update:function(){},remove:function(){}};var t=e.insertStyleElement(e);return{update:function(o){var r,i,a;r="",o.supports&&(r+="@supports (".concat(o.supports,") {")),o.media&&(r+="@media ".concat(o.media," {")),(i=void 0!==o.layer)&&(r+="@layer".concat(o.layer.length>0?" ".concat(o.layer):""," {")),r+=o.css,i&&(r+="}"),o.media&&(r+="}"),o.supports&&(r+="}"),(a=o.sourceMap)&&"u">typeof btoa&&(r+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(a))))," */")),e.styleTagTransform(r,t,e.options)},remove:function(){var e;null===(e=t).parentNode||e.parentNode.removeChild(e)}}}},"./node_modules/style-loader/dist/runtime/styleTagTransform.js"(e){e.exports=function(e,t){if(t.styleSheet)t.styleSheet.cssText=e;else{for(;t.firstChild;)t.removeChild(t.firstChild);t.appendChild(document.createTextNode(e))}}},"./style/index.js"(e,t,o){var r=o("./node_modules/style-loader/dist/runtime/injectStylesIntoStyleTag.js"),i=o.n(r),a=o("./node_modules/style-loader/dist/runtime/styleDomAPI.js"),s=o.n(a),n=o("./node_modules/style-loader/dist/runtime/insertBySelector.js"),d=o.n(n),l=o("./node_modules/style-loader/dist/runtime/setAttributesWithoutAttributes.js"),c=o.n(l),p=o("./node_modules/style-loader/dist/runtime/insertStyleElement.js"),u=o.n(p),f=o("./node_modules/style-loader/dist/runtime/styleTagTransform.js"),m=o.n(f),y=o("./node_modules/css-loader/dist/cjs.js!./style/index.css"),v={};v.styleTagTransform=m(),v.setAttributes=c(),v.insert=d().bind(null,"head"),v.domAPI=s(),v.insertStyleElement=u(),i()(y.A,v),y.A&&y.A.locals&&y.A.locals}}]);