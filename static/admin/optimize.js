// The Optimize card of the Context panel: the server's suggestions with what each saves and what
// it costs in cache, applied in one click (the one save, with the set's ETag), the compaction
// preview, and Compact now with an optional focus (a queued run, followed to its end). Nested in
// contextPanel: after a change it calls the panel's reload(), so the table and totals show what is
// stored. Nothing is asked for until the user presses Suggest.
document.addEventListener("alpine:init", () => {
  "use strict";

  Alpine.data("optimizePanel", () => ({
    suggestions: null,
    suggestionCount: 0,
    preview: null,
    optimizing: false,
    optimizeError: "",
    optimizeNotice: "",
    focus: "",

    // Asked for, not loaded with the panel: suggestions cost about an inspect of their own.
    async loadSuggestions() {
      this.optimizeError = "";
      try {
        const body = await hango.get(`/v1/sessions/${this.id}/context/suggestions`);
        this.suggestions = body.suggestions;
        this.suggestionCount = body.count;
        this.preview = body.compaction;
      } catch (error) {
        this.optimizeError = hango.describe(error);
      }
    },

    // Why Compact now is disabled, in words beside it: the preview it acts on comes with Suggest.
    compactWhy() {
      if (this.suggestions === null) return "Press Suggest first: it previews what a compaction would summarize.";
      return this.preview ? "" : "Nothing new to summarize since the last compaction.";
    },

    mayApply(item) {
      return item.target === "session" || this.canChangeAgent; // "agent" and "defer" change the agent
    },

    // The panel's stored explicit set of the suggestion's route plus its parts, in the one save
    // with the panel's ETag of that set: a change made elsewhere since the panel read it is refused (412).
    async applySuggestion(item) {
      if (item.kind === "would_compact") return this.compactNow();
      if (item.target === "defer") return this.deferServer(item);
      await this.changing(async () => {
        const kept = this.stored[item.target].filter((o) => o.paired_from === null && !item.parts.includes(o.part));
        const added = item.parts.map((part) => ({ part, action: "exclude", replacement: null }));
        const body = { [item.target]: { overrides: [...kept, ...added], if_match: this.etags[item.target] } };
        await hango.send("POST", `/v1/sessions/${this.id}/context/save`, { body });
        this.optimizeNotice = `Excluded ${item.parts.join(", ")}: saves ${hango.number(item.tokens_saved)} tokens.`;
      });
    },

    // A defer_server suggestion: the agent's deferral as the server made it (`apply`), PATCHed whole.
    async deferServer(item) {
      await this.changing(async () => {
        await hango.send("PATCH", `/v1/agents/${this.session.agent_id}`, { body: item.apply });
        this.optimizeNotice = `Deferred ${item.parts.join(", ")}: saves ${hango.number(item.tokens_saved)} tokens a call until tool_search reveals a tool.`;
      });
    },

    // The compaction is a queued run: follow it to its end (as a message's run), then say what it did.
    async compactNow() {
      await this.changing(async () => {
        const body = { instructions: this.focus }; // the server treats a blank focus as none
        const run = (await hango.send("POST", `/v1/sessions/${this.id}/compact`, { body })).data;
        this.optimizeNotice = "Compacting: queued, waiting for a worker.";
        const ended = await hango.follow(run.id, (step) => { this.optimizeNotice = `Compacting: ${step}`; });
        this.optimizeNotice = "";
        if (ended.error || ended.status === "cancelled") {
          this.optimizeError = ended.error ? `${ended.error.message} (${ended.error.code})` : "The compaction was cancelled.";
          return;
        }
        const { summarize } = ended.result;
        this.optimizeNotice = `Compacted messages ${summarize[0]}–${summarize[1]} into the summary.`;
      });
    },

    // One change at a time; then the panel and the suggestions are read again.
    async changing(change) {
      this.optimizing = true;
      this.optimizeError = "";
      this.optimizeNotice = "";
      try {
        await change();
        await this.reload();
        if (this.suggestions !== null) await this.loadSuggestions();
      } catch (error) {
        this.optimizeError = hango.describe(error);
      } finally {
        this.optimizing = false;
      }
    },
  }));
});
