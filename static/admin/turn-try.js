// The whole-turn try of the Context panel: the agent's whole turn (every model call and tool,
// on a scratch copy of the session) run side by side, A with the saved context and B with the
// unsaved changes. Each is POST …/context/try {"mode": "turn"}: a queued run of kind "try",
// followed step by step to its end, whose result is the server's (calls, tools, tokens, cost,
// answer, would-be diffs). Nested in contextPanel: it reads the panel's wanted state and try
// message, and shows a refused try as the one-call Try does. A deferral picked for the turn (defer or
// undefer a tool or a whole MCP server) goes in B's body: the columns then show whether each turn's
// tool_search found and called the tool, and what its first call sent and the turn cost.
// Content is rendered as text only.
document.addEventListener("alpine:init", () => {
  "use strict";

  const model = hango.context;
  const COLUMNS = { a: ["A", "the saved context"], b: ["B", "the unsaved changes"] };

  // What a line of a unified diff is, for its colour: a file header, a hunk, added, removed or context.
  function lineKind(line) {
    if (line.startsWith("+++") || line.startsWith("---")) return "file";
    if (line.startsWith("@@")) return "hunk";
    if (line.startsWith("+")) return "added";
    if (line.startsWith("-")) return "removed";
    return "context";
  }

  Alpine.data("turnTry", () => ({
    turns: null, // one column per run, A first; a new try replaces them
    turnStarting: false,
    turnCancelling: false,
    turnDeferral: [], // {part, action}: what B defers ("defer") or sends though deferred ("undefer")
    deferPick: "",
    deferAction: "defer",

    // The tools and MCP servers a turn may defer or undefer: every tool part but tool_search, every server.
    deferChoices() {
      const snapshot = this.snapshot || {};
      const tools = (snapshot.tools || []).map((part) => part.id).filter((id) => id !== "tool:tool_search");
      const servers = (snapshot.tool_groups || []).map((group) => group.part).filter(Boolean);
      return [...servers, ...tools];
    },

    addDeferral() {
      if (!this.deferPick || this.turnDeferral.some((entry) => entry.part === this.deferPick)) return;
      this.turnDeferral.push({ part: this.deferPick, action: this.deferAction });
      this.deferPick = "";
    },

    deferralBody() {
      const of = (action) => this.turnDeferral.filter((entry) => entry.action === action).map((entry) => entry.part);
      return { defer: of("defer"), undefer: of("undefer") };
    },

    get turnRunning() {
      return Boolean(this.turns && this.turns.some((column) => !column.ended));
    },

    // B is queued first: the server screens its overrides (a 422 names the parts) before A starts.
    // Without unsaved changes there is no B: A alone shows the turn with the saved context.
    async tryTurn() {
      this.tryError = "";
      this.rowErrors = {};
      this.turnStarting = true;
      const changes = model.tryBody(this.snapshot, Alpine.raw(this.want), this.storedAll, this.tryMessage);
      const bodies = {
        b: { ...changes, ...this.deferralBody(), mode: "turn" },
        a: { mode: "turn", message: changes.message },
      };
      const keys = this.pendingCount || this.turnDeferral.length ? ["b", "a"] : ["a"];
      const queued = []; // A first
      try {
        for (const key of keys) queued.unshift(await this.queueTurn(key, bodies[key]));
      } catch (error) {
        await Promise.all(queued.map((column) => this.cancelRun(column)));
        this.showError(error, "tryError");
        return;
      } finally {
        this.turnStarting = false;
      }
      this.turns = queued;
      this.$nextTick(() => this.$refs.turn.scrollIntoView({ block: "start" }));
      await Promise.all(this.turns.map((column) => this.followTurn(column)));
    },

    async queueTurn(key, body) {
      const run = (await hango.send("POST", `/v1/sessions/${this.id}/context/try`, { body })).data;
      const [name, saved] = COLUMNS[key];
      const what = key === "b" && this.turnDeferral.length
        ? `${this.pendingCount ? saved : "the saved context"} with the deferral`
        : saved;
      return { key, name, what, run, status: run.status, steps: [], result: null, error: "", ended: false };
    },

    // Poll one run's steps into its column until it ends, then show its result or why it has none.
    async followTurn(column) {
      const turns = this.turns;
      try {
        const onStep = (step, status) => {
          column.steps.push(step);
          column.status = status;
        };
        const ended = await hango.follow(column.run.id, onStep, () => this.turns === turns);
        if (!ended) return; // a newer try replaced this one
        column.status = ended.status;
        column.result = model.freeze(ended.result);
        if (ended.error) column.error = `${ended.error.message} (${ended.error.code})`;
        else if (ended.status === "cancelled") column.error = "Cancelled: the turn stopped at its next step.";
      } catch (error) {
        column.error = hango.describe(error);
      } finally {
        column.ended = true;
      }
    },

    async cancelTurns() {
      this.turnCancelling = true;
      await Promise.all(this.turns.filter((column) => !column.ended).map((column) => this.cancelRun(column)));
      this.turnCancelling = false;
    },

    // A run that ended meanwhile (409 run_finished) has nothing left to stop.
    async cancelRun(column) {
      try {
        await hango.send("POST", `/v1/runs/${column.run.id}/cancel`, { body: {} });
      } catch (error) {
        if (error.status !== 409) column.error = hango.describe(error);
      }
    },

    // A unified diff as the server sent it, one entry per line with its kind.
    diffLines: (diff) => diff.replace(/\n$/, "").split("\n").map((text) => ({ text, kind: lineKind(text) })),

    usageLine: (usage) => `${hango.number(usage.input_tokens)} in · ${hango.number(usage.output_tokens)} out · `
      + `${hango.number(usage.cache_read_tokens)} cache read · ${hango.number(usage.cache_write_tokens)} cache write`,

    // "searched 'find text' → revealed tool:grep; called grep": one tool_search of the turn (the server's).
    searchLine(search) {
      const said = `searched '${search.query}' → `;
      if (!search.revealed.length) return `${said}revealed nothing`;
      const called = search.called.length ? `called ${search.called.join(", ")}` : "called none of them";
      return `${said}revealed ${search.revealed.join(", ")}; ${called}`;
    },

    deferralLine(deferral) {
      const said = [];
      if (deferral && deferral.defer.length) said.push(`deferred ${deferral.defer.join(", ")}`);
      if (deferral && deferral.undefer.length) said.push(`sent though deferred ${deferral.undefer.join(", ")}`);
      return said.join(" · ") || "the agent's own";
    },

    // "1,234 tokens · 5 tools": what the turn's first call sent, as the call ledger holds it.
    firstCallLine(result) {
      const call = result.calls[0];
      if (!call || !call.id) return "not in the call ledger";
      const tools = call.tools_sent;
      return `${hango.number(call.usage.prompt_tokens)} tokens · ${hango.number(tools)} tool${tools === 1 ? "" : "s"}`;
    },

    changeClass: (change) => ({ created: "ok", edited: "warn", deleted: "danger" })[change.change] || "",
  }));
});
