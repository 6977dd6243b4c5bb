"use strict";(self.rspackChunkoi_kernel=self.rspackChunkoi_kernel||[]).push([["style_index_js"],{"./node_modules/css-loader/dist/cjs.js!./style/index.css"(e,t,r){var o=r("./node_modules/css-loader/dist/runtime/noSourceMaps.js"),n=r.n(o),i=r("./node_modules/css-loader/dist/runtime/api.js"),a=(r.n(i))()(n());a.push([e.id,`/* Open Interpreter for Jupyter (oi-kernel) */

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
`,""]),r.d(t,{},{A:a})},"./node_modules/css-loader/dist/runtime/api.js"(e){e.exports=function(e){var t=[];return t.toString=function(){return this.map(function(t){var r="",o=void 0!==t[5];return t[4]&&(r+="@supports (".concat(t[4],") {")),t[2]&&(r+="@media ".concat(t[2]," {")),o&&(r+="@layer".concat(t[5].length>0?" ".concat(t[5]):""," {")),r+=e(t),o&&(r+="}"),t[2]&&(r+="}"),t[4]&&(r+="}"),r}).join("")},t.i=function(e,r,o,n,i){"string"==typeof e&&(e=[[null,e,void 0]]);var a={};if(o)for(var s=0;s<this.length;s++){var d=this[s][0];null!=d&&(a[d]=!0)}for(var l=0;l<e.length;l++){var c=[].concat(e[l]);o&&a[c[0]]||(void 0!==i&&(void 0===c[5]||(c[1]="@layer".concat(c[5].length>0?" ".concat(c[5]):""," {").concat(c[1],"}")),c[5]=i),r&&(c[2]&&(c[1]="@media ".concat(c[2]," {").concat(c[1],"}")),c[2]=r),n&&(c[4]?(c[1]="@supports (".concat(c[4],") {").concat(c[1],"}"),c[4]=n):c[4]="".concat(n)),t.push(c))}},t}},"./node_modules/css-loader/dist/runtime/noSourceMaps.js"(e){e.exports=function(e){return e[1]}},"./node_modules/style-loader/dist/runtime/injectStylesIntoStyleTag.js"(e){var t=[];function r(e){for(var r=-1,o=0;o<t.length;o++)if(t[o].identifier===e){r=o;break}return r}function o(e,o){for(var n={},i=[],a=0;a<e.length;a++){var s=e[a],d=o.base?s[0]+o.base:s[0],l=n[d]||0,c="".concat(d," ").concat(l);n[d]=l+1;var p=r(c),u={css:s[1],media:s[2],sourceMap:s[3],supports:s[4],layer:s[5]};if(-1!==p)t[p].references++,t[p].updater(u);else{var f=function(e,t){var r=t.domAPI(t);return r.update(e),function(t){t?(t.css!==e.css||t.media!==e.media||t.sourceMap!==e.sourceMap||t.supports!==e.supports||t.layer!==e.layer)&&r.update(e=t):r.remove()}}(u,o);o.byIndex=a,t.splice(a,0,{identifier:c,updater:f,references:1})}i.push(c)}return i}e.exports=function(e,n){var i=o(e=e||[],n=n||{});return function(e){e=e||[];for(var a=0;a<i.length;a++){var s=r(i[a]);t[s].references--}for(var d=o(e,n),l=0;l<i.length;l++){var c=r(i[l]);0===t[c].references&&(t[c].updater(),t.splice(c,1))}i=d}}},"./node_modules/style-loader/dist/runtime/insertBySelector.js"(e){var t={};e.exports=function(e,r){var o=function(e){if(void 0===t[e]){var r=document.querySelector(e);if(window.HTMLIFrameElement&&r instanceof window.HTMLIFrameElement)try{r=r.contentDocument.head}catch(e){r=null}t[e]=r}return t[e]}(e);if(!o)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");o.appendChild(r)}},"./node_modules/style-loader/dist/runtime/insertStyleElement.js"(e){e.exports=function(e){var t=document.createElement("style");return e.setAttributes(t,e.attributes),e.insert(t,e.options),t}},"./node_modules/style-loader/dist/runtime/setAttributesWithoutAttributes.js"(e,t,r){e.exports=function(e){var t=r.nc;t&&e.setAttribute("nonce",t)}},"./node_modules/style-loader/dist/runtime/styleDomAPI.js"(e){e.exports=function(e){if("u"<typeof document)return{update:function(){},remove:function(){}};var t=e.insertStyleElement(e);return{update:function(r){var o,n,i;o="",r.supports&&(o+="@supports (".concat(r.supports,") {")),r.media&&(o+="@media ".concat(r.media," {")),(n=void 0!==r.layer)&&(o+="@layer".concat(r.layer.length>0?" ".concat(r.layer):""," {")),o+=r.css,n&&(o+="}"),r.media&&(o+="}"),r.supports&&(o+="}"),(i=r.sourceMap)&&"u">typeof btoa&&(o+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(i))))," */")),e.styleTagTransform(o,t,e.options)},remove:function(){var e;null===(e=t).parentNode||e.parentNode.removeChild(e)}}}},"./node_modules/style-loader/dist/runtime/styleTagTransform.js"(e){e.exports=function(e,t){if(t.styleSheet)t.styleSheet.cssText=e;else{for(;t.firstChild;)t.removeChild(t.firstChild);t.appendChild(document.createTextNode(e))}}},"./style/index.js"(e,t,r){var o=r("./node_modules/style-loader/dist/runtime/injectStylesIntoStyleTag.js"),n=r.n(o),i=r("./node_modules/style-loader/dist/runtime/styleDomAPI.js"),a=r.n(i),s=r("./node_modules/style-loader/dist/runtime/insertBySelector.js"),d=r.n(s),l=r("./node_modules/style-loader/dist/runtime/setAttributesWithoutAttributes.js"),c=r.n(l),p=r("./node_modules/style-loader/dist/runtime/insertStyleElement.js"),u=r.n(p),f=r("./node_modules/style-loader/dist/runtime/styleTagTransform.js"),m=r.n(f),y=r("./node_modules/css-loader/dist/cjs.js!./style/index.css"),v={};v.styleTagTransform=m(),v.setAttributes=c(),v.insert=d().bind(null,"head"),v.domAPI=a(),v.insertStyleElement=u(),n()(y.A,v),y.A&&y.A.locals&&y.A.locals}}]);