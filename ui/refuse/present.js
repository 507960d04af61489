// Presenter mode's live step (issue 35, item 5), on the live panel's component: one slider from keyword search to
// meaning search, the step's query re-fused in the browser (fuse.mjs) on every input event, and the note the step is
// about found — or lost — in plain words. Nothing is sent to the server: presenter mode changes no setting.
// The arrow keys move the slider and stop there (the page's ← and → step through the story only outside it).

const PRESENTS = new WeakMap(); // parentElement → the step's state, kept across reruns

function presentSetting(V) {
  const b = Number(V.input.value) / 100; // 0: keyword search only … 1: meaning search only
  return { ...V.data.setting, dense_weight: b, sparse_weight: 1 - b };
}

function presentSay(V, rank) {
  const b = Number(V.input.value), w = V.data.words;
  const mix = b <= 10 ? `Almost all ${w.keyword}` : b >= 90 ? `Almost all ${w.meaning}`
    : b < 50 ? `Mostly ${w.keyword}` : b > 50 ? `Mostly ${w.meaning}` : "Half and half";
  if (rank === 1) return [`${mix}: ${w.target} comes out on top.`, "pv-hit"];
  if (rank) return [`${mix}: ${w.target} is #${rank}.`, rank <= 3 ? "pv-hit" : "pv-miss"];
  return [`${mix}: ${w.target} is not in the top ${V.data.shown}.`, "pv-miss"];
}

function drawPresent(V) {
  const d = V.data, final = assemble(d, presentSetting(V)).final.slice(0, d.shown);
  const rank = final.findIndex((t) => t.id === d.target) + 1 || null;
  const [text, cls] = presentSay(V, rank);
  V.say.textContent = text;
  V.say.className = "pv-say " + cls;
  V.list.replaceChildren(...final.map((t, i) => {
    const li = el("li", { "data-id": t.id, class: t.id === d.target ? "pv-target" : "" });
    const body = el("div", { class: "pv-text" }, own(d.texts, t.id) || "");
    body.append(el("span", { class: "pv-how" }, `found by: ${own(d.found_by, t.id) || "—"}`
      + (t.id === d.target ? " · ★ the one this step is about" : "")));
    li.append(el("div", { class: "pv-rank" }, i + 1), body);
    return li;
  }));
  V.root.dataset.targetRank = String(rank || 0);
  V.root.dataset.balance = V.input.value;
}

function buildPresent(parent) {
  const V = {};
  V.root = el("div", { class: "pv" });
  const row = el("label", { class: "pv-slider" });
  V.input = el("input", { type: "range", min: "0", max: "100", step: "5", "aria-label": "Balance between keyword "
    + "search and meaning search" });
  V.left = el("span", {});
  V.right = el("span", {});
  row.append(V.left, V.input, V.right);
  V.say = el("p", { class: "pv-say", role: "status" });
  V.list = el("ol", { class: "pv-list" });
  V.root.append(row, V.say, V.list);
  V.input.addEventListener("input", () => drawPresent(V));
  V.input.addEventListener("keydown", (e) => {
    if (e.key.startsWith("Arrow") || e.key === "Home" || e.key === "End") e.stopPropagation();
  });
  const loading = parent.querySelector(".rf-loading");
  if (loading) loading.remove();
  parent.append(V.root);
  return V;
}

function mountPresent(component) {
  const { data, parentElement } = component;
  let V = PRESENTS.get(parentElement);
  if (!V) {
    V = buildPresent(parentElement);
    PRESENTS.set(parentElement, V);
  }
  if (!V.data || V.data.sig !== data.sig) {
    V.input.value = String(data.balance);
    const mine = assemble(data, data.setting).final, theirs = data.server_final;
    V.ok = mine.length === theirs.length && mine.every((t, i) => t.id === theirs[i][0]
      && Math.abs(t.score - theirs[i][1]) <= 1e-9); // the browser reproduces the step's own list
  }
  V.data = data;
  V.input.disabled = !V.ok;
  if (!V.ok) {
    V.say.textContent = "This step cannot be tried live in this browser; the results above are the step's own.";
    V.list.replaceChildren();
    return;
  }
  V.left.textContent = `← ${data.words.keyword}`;
  V.right.textContent = `${data.words.meaning} →`;
  drawPresent(V);
}
