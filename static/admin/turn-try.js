// The whole-turn try of the Context panel: the agent's whole turn (every model call and tool,
// on a scratch copy of the session) run side by side, A with the saved context and B with the
// unsaved changes. Each is POST …/context/try {"mode": "turn"}: a queued run of kind "try",
// followed step by step to its end, whose result is the server's (calls, tools, tokens, cost,
// answer, would-be diffs). Nested in contextPanel: it reads the panel's wanted state and try
// message, and shows a refused try as the one-call Try does. Content is rendered as text only.
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
      const bodies = { b: { ...changes, mode: "turn" }, a: { mode: "turn", message: changes.message } };
      const keys = this.pendingCount ? ["b", "a"] : ["a"];
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
      const [name, what] = COLUMNS[key];
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

    changeClass: (change) => ({ created: "ok", edited: "warn", deleted: "danger" })[change.change] || "",
  }));
});
