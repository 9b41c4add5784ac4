// Loads the plugin's module.js as Grafana's loader does (an AMD define), with
// stand-ins for the modules Grafana shares (react, @grafana/data,
// @grafana/runtime) that record what the editors render and send, and prints
// what it saw as JSON for TestModuleJS. Usage: node modulejs_harness.js module.js
'use strict';
const fs = require('fs');
const vm = require('vm');

const React = {
  createElement(type, props, ...children) {
    return { type, props: props || {}, children: children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false) };
  },
};
class DataSourcePlugin {
  constructor(ds) { this.DataSourceClass = ds; this.components = {}; }
  setConfigEditor(c) { this.components.ConfigEditor = c; return this; }
  setQueryEditor(c) { this.components.QueryEditor = c; return this; }
}
class DataSourceWithBackend {
  constructor(settings) { this.instanceSettings = settings; }
}
// The dashboard's variables as Grafana's template service holds them: team
// one value, account at All (includeAll, no custom all value: every value),
// user two values, ns at All with a custom all value.
const dashboardVars = [
  { name: 'team', current: { value: 'nlp' }, options: ['nlp'] },
  { name: 'account', current: { value: ['$__all'] }, options: ['nlp', 'vision'] },
  { name: 'user', current: { value: ['bob', 'carol'] }, options: ['bob', 'carol', 'dan'] },
  { name: 'ns', current: { value: '$__all' }, allValue: '.*', options: ['a'] },
];
const templateSrv = {
  // replace as Grafana's does: scoped variables first; All is every option
  // (or the custom all value); csv joins a multi-value with commas, no
  // format joins it as {a,b}.
  replace(s, scoped, format) {
    return s.replace(/\$\{(\w+)(?::(\w+))?\}|\$(\w+)/g, (m, a, f, b) => {
      const name = a || b;
      let value;
      if (scoped && scoped[name]) {
        value = scoped[name].value;
      } else {
        const v = dashboardVars.find((x) => x.name === name);
        if (!v) return m;
        value = v.current.value;
        if (value === '$__all' || (Array.isArray(value) && value.includes('$__all'))) {
          if (v.allValue) return v.allValue;
          value = v.options;
        }
      }
      if (!Array.isArray(value)) return String(value);
      const fmt = f || format;
      return fmt === 'csv' ? value.join(',') : value.length === 1 ? value[0] : '{' + value.join(',') + '}';
    });
  },
  getVariables() { return dashboardVars; },
};
const shared = {
  react: React,
  '@grafana/data': { DataSourcePlugin },
  '@grafana/runtime': { DataSourceWithBackend, getTemplateSrv: () => templateSrv },
};

let exported;
const sandbox = {
  define(deps, factory) {
    exported = factory(...deps.map((d) => {
      if (!(d in shared)) throw new Error('module.js asks for ' + d + ', which the harness does not share');
      return shared[d];
    }));
  },
};
vm.runInNewContext(fs.readFileSync(process.argv[2], 'utf8'), sandbox, { filename: 'module.js' });

// walk yields every element of a rendered tree.
function* walk(n) {
  if (!n || typeof n !== 'object') return;
  yield n;
  for (const c of n.children || []) yield* walk(c);
}
function controls(tree) {
  return [...walk(tree)].filter((n) => ['input', 'select', 'textarea'].includes(n.type));
}
// The value a person would type into a control.
const typed = {
  'Job id': '4242', 'Decision id': 'd-7', Step: '1m', 'Idle below': '10%', 'Idle for': '45m', 'Min gap': '20%',
  'Min duration': '3m', Window: '7d', Limit: '25', Accounts: 'nlp,vision', Users: 'bob', URL: 'https://gpuwatch.example:9402', Token: 's3cret',
  'CA certificate': '-----BEGIN CERTIFICATE-----', Timeout: '120', 'Skip certificate verification': true,
};

const plugin = exported.plugin;
const QueryEditor = plugin.components.QueryEditor;
const ds = new plugin.DataSourceClass({ uid: 'gw', type: 'gpuwatch-datasource' });
const out = {
  exportsPlugin: plugin instanceof DataSourcePlugin,
  extendsBackend: ds instanceof DataSourceWithBackend,
  queryTypes: exported.QUERY_TYPES.map((t) => t.value),
  faultTables: exported.FAULT_TABLES.map((t) => t.value),
  groupings: exported.GROUPINGS,
  defaultQuery: ds.getDefaultQuery(),
  editors: {},
  edited: {},
};

for (const type of out.queryTypes) {
  let query = { refId: 'A', queryType: type };
  let runs = 0;
  const render = () => QueryEditor({ query, onChange: (q) => { query = q; }, onRunQuery: () => { runs++; } });
  out.editors[type] = controls(render()).map((c) => c.props['aria-label']);
  // Type into every field of the type, as a person would, rendering again after each change.
  for (const label of out.editors[type]) {
    const c = controls(render()).find((x) => x.props['aria-label'] === label);
    if (c.type === 'select') {
      const options = c.children.filter((o) => o.type === 'option').map((o) => o.props.value);
      const pick = label === 'Query type' ? type : options[options.length - 1];
      c.props.onChange({ target: { value: pick } });
    } else {
      c.props.onChange({ target: { value: typed[label], checked: typed[label] } });
      if (c.props.onBlur) c.props.onBlur();
    }
  }
  out.edited[type] = { query, runs };
}

// A query type change keeps the fields already typed and runs the query.
out.templated = ds.applyTemplateVariables(
  { refId: 'A', queryType: 'jobstats', jobId: '${job}', window: '$range', idleBelow: '5%' },
  { job: { value: '4242' }, range: { value: '24h' } }
);
// The report's lists: a multi-value variable comma-separated, All (dashboard
// or scoped) as every allocation, arrays joined, literal values kept.
out.templatedLists = {};
for (const [name, q, scoped] of [
  ['dashboard', { account: '${account:csv}', user: '${user:csv}' }],
  ['plain syntax', { account: '$team', user: '$user' }],
  ['scoped', { account: '$account', user: '${user:csv}' }, { account: { value: ['vision', 'cv'] }, user: { value: '$__all' } }],
  ['array and literal', { account: ['${team}', 'cv'], user: 'eve, ${user:csv}', namespace: '${ns:csv}' }],
  ['empty', { account: '', user: [] }],
]) {
  out.templatedLists[name] = ds.applyTemplateVariables(Object.assign({ refId: 'A', queryType: 'report', by: 'account' }, q), scoped || {});
}
out.hiddenFiltered = !ds.filterQuery({ refId: 'A', queryType: 'report', hide: true });

// The config editor: every control typed into; what it sends to Grafana.
let options = { url: '', jsonData: {}, secureJsonData: {}, secureJsonFields: {} };
const renderConfig = () => plugin.components.ConfigEditor({ options, onOptionsChange: (o) => { options = o; } });
out.configControls = controls(renderConfig()).map((c) => c.props['aria-label']);
for (const label of out.configControls) {
  const c = controls(renderConfig()).find((x) => x.props['aria-label'] === label);
  c.props.onChange({ target: { value: typed[label], checked: typed[label] } });
}
out.config = options;
// A token Grafana already holds shows as configured, with a reset.
options = { url: 'http://x', jsonData: {}, secureJsonFields: { token: true } };
const tree = renderConfig();
out.configuredTokenHidden = !controls(tree).some((c) => c.props['aria-label'] === 'Token');
const reset = [...walk(tree)].find((n) => n.type === 'button');
reset.props.onClick();
out.afterReset = options;

process.stdout.write(JSON.stringify(out, null, 1));
