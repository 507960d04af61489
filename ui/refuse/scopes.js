// Home's "Traces per scope" table, drawn by the live panel's component (ui/refuse.py `scopes_table`): a scope, its
// trace count and a bar per row. Drawn here rather than as a chart so that a visitor's browser already holds this
// component's code (Streamlit's component chunk and our script) when an example opens Inspect: the live panel's
// rows are then drawn as soon as the search's result arrives (docs/BENCHMARKS.md, live tuning). Scope names are
// data: every text goes in by textContent.

const SCOPES = new WeakMap(); // parentElement → the table's state, kept across reruns

function mountScopes(component) {
  const { data, parentElement } = component;
  let S = SCOPES.get(parentElement);
  if (!S) {
    S = { table: el("table", { class: "sc", "aria-label": "Traces per scope" }) };
    const head = el("tr");
    for (const [h, cls] of [["scope", "sc-name"], ["traces", "sc-n"], ["", "sc-bar"]]) head.append(el("th", { class: cls }, h));
    const thead = el("thead");
    thead.append(head);
    S.body = el("tbody");
    S.table.append(thead, S.body);
    const loading = parentElement.querySelector(".rf-loading");
    if (loading) loading.remove();
    parentElement.append(S.table);
    SCOPES.set(parentElement, S);
  }
  const most = Math.max(1, ...data.rows.map((r) => r[1]));
  S.body.replaceChildren(...data.rows.map(([name, n]) => {
    const tr = el("tr", { "data-scope": name });
    const bar = el("td", { class: "sc-bar" });
    bar.append(el("div", { class: "sc-fill", style: `width: ${(100 * n / most).toFixed(1)}%` }));
    tr.append(el("td", { class: "sc-name" }, name), el("td", { class: "sc-n" }, n.toLocaleString("en")), bar);
    return tr;
  }));
}
