// The Context panel's logic, free of the page: what the user wants per part, tool
// pairing, and the bodies of the preview, of the one save and of a try call. Every figure
// (totals, free, cache loss, parts left out because of others) is the server's preview.
//
// The server decides the rules: each part's `target` names the route that stores its
// override, and `paired_with` its whole tool pair group; this file only reads them.
//
// A part's wanted state is {on, replacement, pairedFrom}: `on` false excludes it,
// a replacement (kept while unchecked) replaces its text, and pairedFrom names the
// part whose exclusion pulled it in as a tool_use/tool_result companion.
(() => {
  "use strict";

  const GROUPS = ["system", "tools", "messages"];

  // A whole MCP server's part (`tool:<server>/*`, named by its `tool_groups` entry) has no row of its
  // own unless it is stale: its box is the server's heading, on the route of the server's tools.
  function serverParts(snapshot) {
    return (snapshot.tool_groups || []).flatMap((source) => {
      const tools = snapshot.tools.filter((part) => part.server === source.server);
      if (source.part === null || !tools.length || tools.some((part) => part.id === source.part)) return [];
      return [{ id: source.part, kind: "tool", target: tools[0].target, paired_with: [], stale: false }];
    });
  }

  const allParts = (snapshot) => [...GROUPS.flatMap((group) => snapshot[group]), ...serverParts(snapshot)];
  const byPart = (overrides) => Object.fromEntries(overrides.map((o) => [o.part, o]));
  const isAgentPart = (part) => part.target === "agent";

  // What a stored override means for its part.
  function storedState(override) {
    return {
      on: !(override && override.action === "exclude"),
      replacement: override && override.action === "replace" ? override.replacement : null,
      pairedFrom: (override && override.paired_from) || null,
    };
  }

  // The wanted state of every part as stored: the starting point, and what Discard returns to.
  function wantedFrom(snapshot, stored) {
    const overrides = byPart(stored);
    return Object.fromEntries(allParts(snapshot).map((part) => [part.id, storedState(overrides[part.id])]));
  }

  // `start` and the parts the server pairs it with (`paired_with` is the whole group).
  function pairGroup(snapshot, start) {
    const part = allParts(snapshot).find((p) => p.id === start);
    return [start, ...((part && part.paired_with) || [])];
  }

  // Uncheck `id`: its pair companions go with it and remember why. Check it: the
  // whole pair group comes back, released — a request never holds half a pair.
  function toggle(snapshot, want, id, on) {
    for (const other of pairGroup(snapshot, id)) {
      const state = want[other];
      if (on) {
        state.on = true;
        state.pairedFrom = null;
      } else if (other === id) {
        state.on = false;
        state.pairedFrom = null;
      } else if (state.on) {
        state.on = false;
        state.pairedFrom = id;
      }
    }
  }

  // One part's override as the API stores it, or null when the part is sent as it is.
  function overrideOf(id, state) {
    if (!state.on) return { part: id, action: "exclude", replacement: null };
    if (state.replacement !== null) return { part: id, action: "replace", replacement: state.replacement };
    return null;
  }

  // The body of one PUT: the explicit choices on agent (system, tool) or session parts.
  // Companions are left out: the server recomputes them and lists them in `added`.
  function overridesFor(snapshot, want, agent) {
    return allParts(snapshot)
      .filter((part) => isAgentPart(part) === agent && !want[part.id].pairedFrom)
      .map((part) => overrideOf(part.id, want[part.id]))
      .filter(Boolean)
      .sort((a, b) => a.part.localeCompare(b.part));
  }

  const explicitStored = (stored) => stored
    .filter((o) => !o.paired_from)
    .map(({ part, action, replacement }) => ({ part, action, replacement }))
    .sort((a, b) => a.part.localeCompare(b.part));

  // Whether the PUT for one target would change what is stored.
  function changed(snapshot, want, stored, agent) {
    return JSON.stringify(overridesFor(snapshot, want, agent)) !== JSON.stringify(explicitStored(stored));
  }

  // The parts whose wanted state differs from the stored one.
  function pending(snapshot, want, stored) {
    const overrides = byPart(stored);
    return allParts(snapshot).filter((part) => {
      const was = storedState(overrides[part.id]);
      const now = want[part.id];
      return was.on !== now.on || was.replacement !== now.replacement;
    });
  }

  // The body of a preview or of the one save: each route's explicit set, for the routes that change
  // (with `all`, both routes). A save sends each half with the ETag it was read with.
  function proposal(snapshot, want, stored, etags, all) {
    const body = {};
    for (const [route, agent] of [["agent", true], ["session", false]]) {
      if (!all && !changed(snapshot, want, stored[route], agent)) continue;
      body[route] = { overrides: overridesFor(snapshot, want, agent) };
      if (etags) body[route].if_match = etags[route];
    }
    return body;
  }

  // The try body for the wanted state: unsaved unchecks in `exclude`, unsaved re-checks
  // (and dropped replacements) in `include`, unsaved replacements in `replace`.
  function tryBody(snapshot, want, stored, message) {
    const overrides = byPart(stored);
    const body = { exclude: [], include: [], replace: {}, message: message.trim() ? message : null };
    for (const part of allParts(snapshot)) {
      if (part.stale) continue;
      const was = storedState(overrides[part.id]);
      const now = want[part.id];
      if (!now.on) {
        if (was.on && !now.pairedFrom) body.exclude.push(part.id);
        continue;
      }
      if (!was.on || (was.replacement !== null && now.replacement === null)) body.include.push(part.id);
      if (now.replacement !== null && now.replacement !== was.replacement) body.replace[part.id] = now.replacement;
    }
    return body;
  }

  // The text a replacement starts from: a system block's text, a message's text blocks.
  function textOf(full) {
    if (typeof full.content === "string") return full.content;
    if (!Array.isArray(full.content)) return null;
    const texts = full.content.filter((b) => b.type === "text").map((b) => b.text);
    return texts.length ? texts.join("\n\n") : null;
  }

  // "applies to 14 sessions of Demo agent": the server's count of an agent-level set's reach.
  function scopeText(scope) {
    if (!scope) return "";
    const n = scope.sessions;
    return `applies to ${n} session${n === 1 ? "" : "s"} of ${scope.agent_name || "the agent"}`;
  }

  // The bar's segments, in order, as tokens: the server's groups, then free room
  // up to the compaction threshold, the compaction buffer past it, and the output reserve
  // (the request's max_tokens) at the end of the window. They add up to the window.
  function segments(snapshot) {
    const window = snapshot.context_window;
    const used = GROUPS.reduce((total, group) => total + snapshot.totals[group].after, 0);
    const reserve = Math.max(0, Math.min(snapshot.output_reserve, window - used));
    const trigger = Math.min(snapshot.compact_at, window - reserve);
    return [
      { key: "system", label: "System", tokens: snapshot.totals.system.after },
      ...toolSegments(snapshot),
      { key: "messages", label: "Messages and summary", tokens: snapshot.totals.messages.after },
      { key: "free", label: "Free before compaction", tokens: Math.max(0, trigger - used) },
      { key: "buffer", label: "Compaction buffer", tokens: Math.max(0, window - reserve - Math.max(used, trigger)) },
      { key: "reserve", label: "Output reserve", tokens: reserve },
    ];
  }

  // The tools' segments: one, or once an MCP server gives tools, one per source (the built-in tools,
  // each server), its subtotal's share of the group's total (the group's unit: scaled to the
  // provider's count when it counted), the rounding's remainder to the last.
  function toolSegments(snapshot) {
    const total = snapshot.totals.tools.after;
    const sources = snapshot.tool_groups || [];
    if (!sources.some((source) => source.server !== null)) return [{ key: "tools", label: "Tools", tokens: total }];
    const sum = sources.reduce((n, source) => n + source.tokens, 0);
    let left = total;
    return sources.map((source, index) => {
      const tokens = index === sources.length - 1 ? left : Math.floor(sum ? (total * source.tokens) / sum : 0);
      left -= tokens;
      const server = source.server !== null;
      return { key: server ? `server:${source.server}` : "tools", shade: server ? "server" : "tools",
        label: server ? `Server ${source.server}` : "Built-in tools", tokens };
    });
  }

  // The shown tool rows by source once an MCP server gives tools (each with its `tool_groups` entry),
  // else one section without a heading.
  function toolSections(snapshot, rows) {
    const sources = snapshot.tool_groups || [];
    if (!sources.some((source) => source.server !== null)) return [{ key: "tools", source: null, rows }];
    return sources.map((source) => ({
      key: source.part || "built-in", source, rows: rows.filter((part) => part.server === source.server),
    }));
  }

  // Whether a part passes the panel's filters: kind, role, tool name, and a search of its
  // id, label and preview (case-insensitive).
  function passes(part, query) {
    const text = query.search.trim().toLowerCase();
    return (!query.kind || part.kind === query.kind)
      && (!query.role || part.role === query.role)
      && (!query.tool || part.tools.includes(query.tool))
      && (!text || [part.id, part.label, part.preview].some((field) => field.toLowerCase().includes(text)));
  }

  // The rows of each group that the query shows, in its order ("order" as sent, or
  // "tokens", largest first); with `top`, only the `top` largest parts of all groups.
  function view(snapshot, query) {
    const shown = Object.fromEntries(GROUPS.map((group) => [group, snapshot[group].filter((p) => passes(p, query))]));
    const largest = (parts) => [...parts].sort((a, b) => b.tokens - a.tokens);
    if (query.top) {
      const kept = new Set(largest(GROUPS.flatMap((group) => shown[group])).slice(0, query.top).map((p) => p.id));
      for (const group of GROUPS) shown[group] = shown[group].filter((p) => kept.has(p.id));
    }
    if (query.sort === "tokens") for (const group of GROUPS) shown[group] = largest(shown[group]);
    return shown;
  }

  // How two tries differ: the parts each left out that the other sent, the parts whose
  // replacement text differs, and the tokens each read and wrote (b minus a).
  function tryDiff(a, b) {
    const left = new Set(a.result.excluded);
    const right = new Set(b.result.excluded);
    const texts = [a.body.replace, b.body.replace];
    const replaced = [...new Set(texts.flatMap(Object.keys))].filter((part) => texts[0][part] !== texts[1][part]);
    const usage = (name) => (b.result.usage[name] || 0) - (a.result.usage[name] || 0);
    return {
      onlyA: [...left].filter((part) => !right.has(part)),
      onlyB: [...right].filter((part) => !left.has(part)),
      replaced: replaced.sort(),
      input: usage("input_tokens"),
      output: usage("output_tokens"),
    };
  }

  // A frozen copy: Alpine leaves frozen objects unproxied, which keeps 1,000 parts cheap.
  function freeze(value) {
    if (value && typeof value === "object") {
      Object.values(value).forEach(freeze);
      Object.freeze(value);
    }
    return value;
  }

  window.hango.context = {
    isAgentPart, wantedFrom, toggle, overridesFor, changed, pending, proposal, tryBody, textOf, scopeText, freeze,
    segments, view, tryDiff, toolSections,
  };
})();
