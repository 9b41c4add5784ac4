// gpuwatch's Grafana data source: the front end Grafana loads (module.js).
//
// Hand-written, without a bundler: an AMD module, the format Grafana's plugin
// loader (SystemJS) takes, asking Grafana for the modules it shares with
// plugins (react, @grafana/data, @grafana/runtime). The queries run in the
// plugin's backend (gpx_gpuwatch); this file only edits them and the data
// source's settings. docs/grafana-datasource.md describes the query fields.
define(['react', '@grafana/data', '@grafana/runtime'], function (React, grafanaData, grafanaRuntime) {
  'use strict';

  var h = React.createElement;

  var QUERY_TYPES = [
    { value: 'report', label: 'Utilization report', description: 'a row per group: allocated, measured and idle GPU-hours, efficiency' },
    { value: 'jobstats', label: 'Job stats', description: "one job's GPUs: activity, memory, power, idle time, Xids; and its verdict" },
    { value: 'faults', label: 'Faults', description: 'Xids, MTBF, lemon nodes, GPUs to drain soon, InfiniBand ports, NVLinks' },
    { value: 'stragglers', label: 'Stragglers', description: 'GPUs lagging the other GPUs of their job' },
    { value: 'explain', label: 'Placement explanation', description: "a placement decision's outcome and candidate nodes" },
    { value: 'drains', label: 'Drain audit log', description: "the drain controller's records over the time range" },
    { value: 'fairshare', label: 'Fair-share standing', description: 'shares, usage and factors per account and user' },
  ];
  var GROUPINGS = ['account', 'user', 'job', 'namespace', 'node', 'model'];
  var FAULT_TABLES = [
    { value: 'xid_by_code', label: 'Xids by code' },
    { value: 'xid_by_action', label: 'Xids by action' },
    { value: 'xid_by_model', label: 'Xids by GPU model' },
    { value: 'xid_by_node', label: 'Xids by node' },
    { value: 'conditions', label: 'Health conditions by kind' },
    { value: 'mtbf_by_node', label: 'MTBF by node' },
    { value: 'mtbf_by_model', label: 'MTBF by GPU model' },
    { value: 'lemons', label: 'Lemon nodes' },
    { value: 'drain_soon', label: 'Drain soon' },
    { value: 'infiniband', label: 'InfiniBand ports' },
    { value: 'nvlink', label: 'NVLinks' },
  ];
  // The text fields of a query, each with the query types that use it.
  var TEXT_FIELDS = [
    { key: 'jobId', label: 'Job id', types: ['jobstats', 'stragglers'], placeholder: '4242 or namespace/pod', width: 24 },
    { key: 'placementId', label: 'Decision id', types: ['explain'], placeholder: 'the id place answered', width: 24 },
    { key: 'account', label: 'Accounts', types: ['report'], placeholder: 'all, a,b or ${account:csv}', width: 16,
      tooltip: 'only these accounts (comma-separated, exact); a multi-value variable as ${account:csv}; empty or All: every account' },
    { key: 'user', label: 'Users', types: ['report'], placeholder: 'all, u,v or ${user:csv}', width: 16,
      tooltip: 'only these users (comma-separated, exact); a multi-value variable as ${user:csv}; empty or All: every user' },
    { key: 'step', label: 'Step', types: ['report'], placeholder: '10s', width: 8 },
    { key: 'idleBelow', label: 'Idle below', types: ['report', 'jobstats'], placeholder: '5%', width: 8 },
    { key: 'idleFor', label: 'Idle for', types: ['report', 'jobstats'], placeholder: '30m', width: 8 },
    { key: 'minGap', label: 'Min gap', types: ['stragglers'], placeholder: '10%', width: 8 },
    { key: 'minDuration', label: 'Min duration', types: ['stragglers'], placeholder: '2m', width: 8 },
    { key: 'window', label: 'Window', types: ['report', 'jobstats', 'faults', 'stragglers', 'drains'], placeholder: 'the time range', width: 12,
      tooltip: 'a window this long ending where the time range ends (24h, 7d) instead of the time range' },
  ];
  var TEMPLATED = ['by', 'jobId', 'placementId', 'step', 'idleBelow', 'idleFor', 'minGap', 'minDuration', 'window', 'faults'];
  // The report's lists: each value is one account (user, namespace); a
  // multi-value variable in them is replaced comma-separated, and a variable
  // at All (Grafana's $__all) means every one: the field is sent empty, so an
  // allocation whose account the variable does not list (a pod's namespace,
  // a new account) still counts.
  var LISTS = ['account', 'user', 'namespace'];
  var ALL = '$__all';
  var VARIABLE_RE = /\$(\w+)|\$\{(\w+)(?::[^}]*)?\}|\[\[(\w+)(?::[^\]]*)?\]\]/g;

  var rowStyle = { display: 'flex', flexWrap: 'wrap', gap: '8px', alignItems: 'center', marginBottom: '4px' };
  var labelStyle = { display: 'inline-flex', alignItems: 'center', gap: '4px' };

  function assign(target) {
    for (var i = 1; i < arguments.length; i++) {
      var src = arguments[i];
      for (var k in src) {
        if (Object.prototype.hasOwnProperty.call(src, k)) {
          target[k] = src[k];
        }
      }
    }
    return target;
  }

  function field(label, control, tooltip) {
    return h('label', { key: label, style: labelStyle, title: tooltip || '' }, h('span', null, label), control);
  }

  function select(value, options, onChange, ariaLabel) {
    return h(
      'select',
      { value: value, 'aria-label': ariaLabel, onChange: function (e) { onChange(e.target.value); } },
      options.map(function (o) {
        var v = typeof o === 'string' ? o : o.value;
        return h('option', { key: v, value: v, title: o.description || '' }, typeof o === 'string' ? o : o.label);
      })
    );
  }

  function isAll(value) {
    return value === ALL || (Array.isArray(value) && value.indexOf(ALL) >= 0);
  }

  // atAll says whether text names a template variable set to All, in
  // scopedVars (a repeated panel's) or on the dashboard.
  function atAll(srv, text, scopedVars) {
    var m;
    VARIABLE_RE.lastIndex = 0;
    while ((m = VARIABLE_RE.exec(text)) !== null) {
      var name = m[1] || m[2] || m[3];
      if (scopedVars && scopedVars[name]) {
        if (isAll(scopedVars[name].value)) {
          return true;
        }
        continue;
      }
      var vars = typeof srv.getVariables === 'function' ? srv.getVariables() : [];
      for (var i = 0; i < vars.length; i++) {
        if (vars[i].name === name && vars[i].current && isAll(vars[i].current.value)) {
          return true;
        }
      }
    }
    return false;
  }

  // list replaces the variables of a report list (a comma-separated string,
  // or an array of them) into one comma-separated string; '' is every value.
  function list(srv, value, scopedVars) {
    var parts = Array.isArray(value) ? value : [value];
    var out = [];
    for (var i = 0; i < parts.length; i++) {
      var p = parts[i] === undefined || parts[i] === null ? '' : String(parts[i]);
      if (atAll(srv, p, scopedVars)) {
        return '';
      }
      var r = srv.replace(p, scopedVars, 'csv');
      if (r.split(',').some(function (x) { return x.trim() === ALL; })) {
        return '';
      }
      if (r.trim() !== '') {
        out.push(r);
      }
    }
    return out.join(',');
  }

  // DataSource runs queries through the backend; it replaces Grafana's
  // template variables ($job, ${account:csv}) in the query's text fields
  // first (Grafana sends the backend what this returns).
  class DataSource extends grafanaRuntime.DataSourceWithBackend {
    constructor(instanceSettings) {
      super(instanceSettings);
    }

    getDefaultQuery() {
      return { queryType: 'report', by: 'account' };
    }

    filterQuery(query) {
      return !query.hide && !!query.queryType;
    }

    applyTemplateVariables(query, scopedVars) {
      var srv = grafanaRuntime.getTemplateSrv();
      var out = assign({}, query);
      TEMPLATED.forEach(function (k) {
        if (typeof out[k] === 'string' && out[k] !== '') {
          out[k] = srv.replace(out[k], scopedVars);
        }
      });
      LISTS.forEach(function (k) {
        if (out[k] !== undefined && out[k] !== null && out[k] !== '') {
          out[k] = list(srv, out[k], scopedVars);
        }
      });
      return out;
    }
  }

  // QueryEditor: the query type, then the fields that type reads.
  function QueryEditor(props) {
    var query = props.query;
    var type = query.queryType || 'report';
    function change(patch, run) {
      props.onChange(assign({}, query, patch));
      if (run && props.onRunQuery) {
        props.onRunQuery();
      }
    }
    var rows = [];
    var first = [field('Query', select(type, QUERY_TYPES, function (v) { change({ queryType: v }, true); }, 'Query type'))];
    if (type === 'report') {
      first.push(field('Group by', select(query.by || 'account', GROUPINGS, function (v) { change({ by: v }, true); }, 'Group by')));
    }
    if (type === 'faults') {
      first.push(field('Table', select(query.faults || 'xid_by_code', FAULT_TABLES, function (v) { change({ faults: v }, true); }, 'Faults table')));
    }
    if (type === 'drains') {
      first.push(field('Limit', h('input', {
        type: 'number', min: 1, value: query.limit || '', placeholder: '1000', 'aria-label': 'Limit', style: { width: '8em' },
        onChange: function (e) { change({ limit: e.target.value === '' ? undefined : parseInt(e.target.value, 10) }); },
        onBlur: function () { if (props.onRunQuery) { props.onRunQuery(); } },
      })));
    }
    rows.push(h('div', { key: 'type', style: rowStyle }, first));
    var texts = TEXT_FIELDS.filter(function (f) { return f.types.indexOf(type) >= 0; }).map(function (f) {
      return field(f.label, h('input', {
        key: f.key, type: 'text', value: query[f.key] || '', placeholder: f.placeholder, 'aria-label': f.label,
        style: { width: f.width + 'em' },
        onChange: function (e) { var p = {}; p[f.key] = e.target.value; change(p); },
        onBlur: function () { if (props.onRunQuery) { props.onRunQuery(); } },
      }), f.tooltip);
    });
    if (texts.length > 0) {
      rows.push(h('div', { key: 'fields', style: rowStyle }, texts));
    }
    var doc = QUERY_TYPES.filter(function (t) { return t.value === type; })[0];
    rows.push(h('div', { key: 'help', style: { opacity: 0.7, fontSize: '12px' } }, doc ? doc.description : ''));
    return h('div', { className: 'gpuwatch-query-editor' }, rows);
  }

  // ConfigEditor: the server's URL, the bearer token (secureJsonData: Grafana
  // keeps it encrypted and never sends it back to the browser), an optional
  // CA certificate and the timeout.
  function ConfigEditor(props) {
    var options = props.options;
    var jsonData = options.jsonData || {};
    var secure = options.secureJsonData || {};
    var configured = options.secureJsonFields || {};
    function update(patch) {
      props.onOptionsChange(assign({}, options, patch));
    }
    function setSecure(key, value) {
      var s = assign({}, secure);
      s[key] = value;
      update({ secureJsonData: s });
    }
    function resetSecure(key) {
      var f = assign({}, configured);
      f[key] = false;
      var s = assign({}, secure);
      s[key] = '';
      update({ secureJsonFields: f, secureJsonData: s });
    }
    function secret(key, label, multiline, placeholder) {
      if (configured[key]) {
        return field(label, h('span', null, 'configured ', h('button', { type: 'button', onClick: function () { resetSecure(key); } }, 'Reset')));
      }
      var attrs = {
        value: secure[key] || '', placeholder: placeholder, 'aria-label': label,
        onChange: function (e) { setSecure(key, e.target.value); },
      };
      if (multiline) {
        return field(label, h('textarea', assign(attrs, { rows: 4, cols: 64 })));
      }
      return field(label, h('input', assign(attrs, { type: 'password', style: { width: '32em' } })));
    }
    var col = { display: 'flex', flexDirection: 'column', gap: '8px', maxWidth: '60em' };
    return h('div', { className: 'gpuwatch-config-editor', style: col },
      h('h3', null, 'gpuwatch server'),
      field('URL', h('input', {
        type: 'url', value: options.url || '', placeholder: 'http://gpuwatch:9402', 'aria-label': 'URL', style: { width: '32em' },
        onChange: function (e) { update({ url: e.target.value }); },
      })),
      secret('token', 'Token', false, 'a read-role token (gpuwatch token --role read)'),
      h('h3', null, 'TLS'),
      secret('tlsCACert', 'CA certificate', true, '-----BEGIN CERTIFICATE-----'),
      field('Skip certificate verification', h('input', {
        type: 'checkbox', checked: !!jsonData.tlsSkipVerify, 'aria-label': 'Skip certificate verification',
        onChange: function (e) { update({ jsonData: assign({}, jsonData, { tlsSkipVerify: e.target.checked }) }); },
      })),
      field('Timeout (seconds)', h('input', {
        type: 'number', min: 1, value: jsonData.timeoutSeconds || '', placeholder: '300', 'aria-label': 'Timeout',
        onChange: function (e) {
          var v = e.target.value === '' ? undefined : Number(e.target.value);
          update({ jsonData: assign({}, jsonData, { timeoutSeconds: v }) });
        },
      }))
    );
  }

  var plugin = new grafanaData.DataSourcePlugin(DataSource).setConfigEditor(ConfigEditor).setQueryEditor(QueryEditor);
  return { plugin: plugin, DataSource: DataSource, QueryEditor: QueryEditor, ConfigEditor: ConfigEditor, QUERY_TYPES: QUERY_TYPES, FAULT_TABLES: FAULT_TABLES, GROUPINGS: GROUPINGS };
});
