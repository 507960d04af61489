// The browser twin of retrieval.fusion and retrieval.pipeline.assemble (steps 4–7): fuse, hydrate, blend, split,
// truncate, from the plain payload `retrieval.pipeline.browser.refuse_payload` builds once per search.
// A plain ES module: node imports it for the parity test (tests/test_refuse_parity.py), and ui/refuse.py inlines it
// (with `export` dropped) before the component's view code. Every step follows the Python line by line, in the same
// floating-point order, so scores agree to the last bit where the operations are the same.

export function cmpId(a, b) {
  // Python orders strings by code point; JS `<` by UTF-16 unit. They agree unless a surrogate pair is involved.
  if (a === b) return 0;
  if (/[\ud800-\udfff]/.test(a + b)) {
    const x = Array.from(a, (c) => c.codePointAt(0)), y = Array.from(b, (c) => c.codePointAt(0));
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
    return x.length - y.length;
  }
  return a < b ? -1 : 1;
}

export function own(obj, key) {
  // obj[key] when obj holds it itself: an id such as "toString" or "__proto__" is an id, not Object's property.
  return obj && Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

export function byScore(a, b) {
  // Python's key (-score, id): higher score first, ties by id.
  if (a.score !== b.score) return a.score > b.score ? -1 : 1;
  return cmpId(a.id, b.id);
}

const F64 = new Float64Array(1), U32 = new Uint32Array(F64.buffer);
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0; // little-endian: the high word is [1]

export function frexpExp(x) {
  // The e of math.frexp(x): x = m·2**e with 0.5 <= |m| < 1; 0 for 0.
  if (x === 0) return 0;
  F64[0] = x;
  let bits = (U32[HI] >>> 20) & 0x7ff;
  if (bits === 0) { F64[0] = x * 2 ** 64; bits = ((U32[HI] >>> 20) & 0x7ff) - 64; }
  return bits - 1022;
}

export function ldexp(v, n) {
  // v·2**n, exact where representable (scaling up is split so 2**n never overflows).
  if (n > 1023) return v * 2 ** 1023 * 2 ** (n - 1023);
  if (n < -1022) return v * 2 ** (n);
  return v * 2 ** n;
}

export function fsum(xs) {
  // math.fsum: Shewchuk's exact partials, rounded once at the end as CPython does.
  const partials = [];
  for (let x of xs) {
    let i = 0;
    for (let j = 0; j < partials.length; j++) {
      let y = partials[j];
      if (Math.abs(x) < Math.abs(y)) { const t = x; x = y; y = t; }
      const hi = x + y, lo = y - (hi - x);
      if (lo !== 0) partials[i++] = lo;
      x = hi;
    }
    partials.length = i;
    partials.push(x);
  }
  let n = partials.length, hi = 0, lo = 0;
  if (n > 0) {
    hi = partials[--n];
    while (n > 0) {
      const x = hi, y = partials[--n];
      hi = x + y;
      const yr = hi - x;
      lo = y - yr;
      if (lo !== 0) break;
    }
    if (n > 0 && ((lo < 0 && partials[n - 1] < 0) || (lo > 0 && partials[n - 1] > 0))) {
      const y = lo * 2, x = hi + y, yr = x - hi;
      if (y === yr) hi = x;
    }
  }
  return hi;
}

function scaled(values, also = []) {
  const all = values.concat(also);
  const e = frexpExp(Math.max(...all.map(Math.abs)));
  return all.map((v) => ldexp(v, -e));
}

export function normalize(scores, method, lowerBound = 0) {
  // retrieval.fusion._normalize: minmax, theoretical, zscore (mean ± 3 sample σ onto [0, 1]).
  const n = scores.length;
  if (n === 0) return [];
  const mx = Math.max(...scores), mn = Math.min(...scores);
  let xs, lo, hi, flat;
  if (method === "minmax") {
    if (mx === mn) return scores.map(() => 1.0);
    xs = scaled(scores);
    lo = Math.min(...xs); hi = Math.max(...xs); flat = 1.0;
  } else if (method === "theoretical") {
    if (mx <= lowerBound) return scores.map(() => 0.0);
    xs = scaled(scores.map((s) => (s >= lowerBound ? s : lowerBound)), [lowerBound]);
    lo = xs.pop(); hi = Math.max(...xs); flat = 0.0;
  } else if (method === "zscore") {
    if (n < 2 || mx === mn) return scores.map(() => 0.5);
    xs = scaled(scores);
    const mu = fsum(xs) / n;
    const sigma = Math.sqrt(fsum(xs.map((x) => (x - mu) * (x - mu))) / (n - 1));
    lo = mu - 3.0 * sigma; hi = mu + 3.0 * sigma; flat = 0.5;
  } else {
    throw new Error(`normalization=${method} is unknown`);
  }
  const span = hi - lo;
  if (!(span > 0)) return scores.map(() => flat);
  return xs.map((x) => Math.min(1.0, Math.max(0.0, (x - lo) / span)));
}

function sum(xs) { let s = 0; for (const x of xs) s += x; return s; }

export function rrf(idLists, weights, k, rankStart = 1) {
  // retrieval.fusion.reciprocal_rank_fusion: Σ weight / (k + rank), an id's first rank in each list.
  const n = idLists.length, ranks = new Map();
  idLists.forEach((lst, i) => lst.forEach((id, pos) => {
    if (!ranks.has(id)) ranks.set(id, new Array(n).fill(null));
    const slot = ranks.get(id);
    if (slot[i] === null) slot[i] = pos + rankStart;
  }));
  const out = [];
  for (const [id, rk] of ranks) {
    const contributions = rk.map((r, i) => (r === null ? 0.0 : weights[i] / (k + r)));
    out.push({ id, score: sum(contributions), ranks: rk, contributions, norms: null });
  }
  return out.sort(byScore);
}

export function convex(scoreLists, weights, normalization, lowerBounds) {
  // retrieval.fusion.convex_fusion: Σ weight · normalised score; an id's first occurrence per list counts.
  const rankMaps = [], normMaps = [];
  scoreLists.forEach((lst, i) => {
    const rankOf = new Map();
    lst.forEach(([id], pos) => { if (!rankOf.has(id)) rankOf.set(id, pos + 1); });
    const ids = [...rankOf.keys()], scores = ids.map((id) => lst[rankOf.get(id) - 1][1]);
    const normed = normalize(scores, normalization, lowerBounds ? lowerBounds[i] : 0.0);
    rankMaps.push(rankOf);
    normMaps.push(new Map(ids.map((id, j) => [id, normed[j]])));
  });
  const seen = new Set(), out = [];
  for (const m of rankMaps) for (const id of m.keys()) {
    if (seen.has(id)) continue;
    seen.add(id);
    const norms = normMaps.map((m2) => (m2.has(id) ? m2.get(id) : null));
    const contributions = normMaps.map((m2, i) => weights[i] * (m2.has(id) ? m2.get(id) : 0.0));
    out.push({ id, score: sum(contributions), ranks: rankMaps.map((r) => (r.has(id) ? r.get(id) : null)),
               contributions, norms });
  }
  return out.sort(byScore);
}

// The strategies the component offers; each fuses (dense lists, sparse lists) under a setting.
export const STRATEGIES = {
  rrf: (lists, weights, s) => rrf(lists.map((l) => l.map((p) => p[0])), weights, s.rrf_k),
  convex: (lists, weights, s) => convex(lists, weights, s.normalization, lists.map(() => 0.0)),
  // DBSF (Qdrant): each side onto [0, 1] by μ ± 3σ, clipped, then the weighted sum — convex over zscore.
  dbsf: (lists, weights) => convex(lists, weights, "zscore", lists.map(() => 0.0)),
};

// retrieval.pipeline.adaptive's constants and weight rule (the shift itself comes from the server: it reads the query).
const ADAPT_STEP = 0.05, SHARE_RANGE = [0.1, 0.9];

function roundHalfEven(x) {
  // Python's round(x): halves to the even neighbour (JS Math.round sends them up).
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

export function adaptedShare(share, shift) {
  // adaptive.adapted_share: unchanged below half a step, else on the step grid within SHARE_RANGE (widened to the
  // share as set).
  if (Math.abs(shift) < ADAPT_STEP / 2 || share === 0 || share === 1) return share;
  const lo = Math.min(SHARE_RANGE[0], share), hi = Math.max(SHARE_RANGE[1], share);
  const v = Number((roundHalfEven((share + shift) / ADAPT_STEP) * ADAPT_STEP).toFixed(6));
  return Math.min(hi, Math.max(lo, v));
}

export function adaptWeights(dw, sw, shift) {
  // adaptive.adapt's weights for a query whose rules shift the dense share by `shift` (null: adaptive off).
  if (shift === null || shift === undefined) return [dw, sw];
  const total = dw + sw, share = total > 0 ? dw / total : 0.5, next = adaptedShare(share, shift);
  if (next === share) return [dw, sw];
  const scale = Math.max(total * next, total * (1 - next), 1.0);
  return [Number((total * next / scale).toPrecision(6)), Number((total * (1 - next) / scale).toPrecision(6))];
}

export function fuseLists(p, s) {
  // assemble.fuse: the record's lists (rank-completed on the first pair under the hybrid preset), one weight a side
  // (this query's adapted weights under `adaptive`).
  const dense = p.dense.map((l) => l.slice()), sparse = p.sparse.map((l) => l.slice());
  if (p.complete_ranks) {
    dense[0] = dense[0].concat(p.completion.dense);
    sparse[0] = sparse[0].concat(p.completion.sparse);
  }
  const [dw, sw] = adaptWeights(s.dense_weight, s.sparse_weight, p.adaptive_shift);
  const weights = dense.map(() => dw).concat(sparse.map(() => sw));
  const fuse = STRATEGIES[s.fusion];
  if (!fuse) throw new Error(`fusion=${s.fusion} has no browser twin`);
  return fuse(dense.concat(sparse), weights, s);
}

function denseOnly(p, s) {
  // The sparse side found nothing: facts + the dense hits (several dense lists fused by plain RRF).
  if (p.dense.length > 1) {
    const f = rrf(p.dense.map((l) => l.map((x) => x[0])), p.dense.map(() => 1.0), s.rrf_k);
    return f.map((x) => ({ id: x.id, score: own(p.base, x.id), fused: x }));
  }
  return p.dense.length ? p.dense[0].map(([id, score]) => ({ id, score })) : [];
}

export function assemble(p, s) {
  // assemble(record, settings): {final, merged, pool, dropped, weights}; each entry
  // {id, score, fused?, blend?, split?} with the numbers an explanation shows.
  const facts = p.facts.map(([id, score]) => ({ id, score, fact: true }));
  if (p.empty) return { final: [], merged: [], pool: [], dropped: Object.create(null) };
  if (p.sparse_empty) {
    const final = facts.concat(denseOnly(p, s)).slice(0, s.recall_top_k);
    return { final, merged: [], pool: final, dropped: Object.create(null), sparseEmpty: true };
  }
  const fused = fuseLists(p, s);
  const top = fused.length && fused[0].score > 0 ? fused[0].score : 1.0;
  const pool = [], dropped = Object.create(null);
  for (const f of fused) {
    const kind = own(p.hydrated, f.id); // "dense" (a dense hit), "sparse" (a sparse-only id found in the store)
    if (kind !== "dense" && !p.hydrate_sparse_only) { dropped[f.id] = "preset"; continue; }
    if (kind === undefined) { dropped[f.id] = "missing"; continue; }
    pool.push({ id: f.id, score: p.blend_fused ? f.score / top : own(p.base, f.id), fused: f });
  }
  let order = facts.concat(pool);
  const rr = p.rerank;
  if (rr) {
    const w = s.rerank_weight;
    order = order.map((t) => {
      const r = own(rr.scores, t.id) ?? 0.0;
      const blended = (1 - w) * t.score + w * r;
      return { ...t, score: blended, blend: { base: t.score, rerank: r, weight: w, blended } };
    }).sort(byScore);
    if (rr.split) {
      order = order.map((t) => {
        const sp = own(rr.split, t.id);
        if (!sp || !(sp.better > sp.whole)) return t;
        const gain = w * (sp.better - sp.whole);
        return { ...t, score: t.score + gain, split: { ...sp, gain } };
      }).sort(byScore);
    }
  }
  const weights = adaptWeights(s.dense_weight, s.sparse_weight, p.adaptive_shift); // what each side was fused with
  return { final: order.slice(0, s.recall_top_k), merged: fused, pool: order, dropped, weights };
}
