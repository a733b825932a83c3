// The Context panel of a session: every part of the next model request with a
// checkbox, Save (both override sets in one save, each with its ETag) and Try (one model
// call). Every figure shown is the server's: with unsaved changes, its preview of them.
document.addEventListener("alpine:init", () => {
  "use strict";

  const model = hango.context;
  const PAGE = 100; // message rows shown at once: the panel stays quick at thousands of messages
  const TOP = 10; // "Top 10 by tokens"
  const everything = () => ({ sort: "order", kind: "", role: "", tool: "", search: "", top: 0 });
  const DEFERRED_WHY =
    "deferred: not sent until the model's tool_search reveals it, so its tokens are saved on every call " +
    "(the agent's deferral decides; an override cannot send it)";

  Alpine.data("contextPanel", () => ({
    id: hango.ids().sessionId,
    session: null,
    agentName: "",
    missing: false,
    canChangeAgent: false,
    snapshot: null, // the inspect response: what is stored
    current: null, // what the panel shows: the snapshot, or the server's preview of the unsaved changes
    previewing: false,
    previewTicket: 0,
    stored: { agent: [], session: [] },
    scope: null,
    agentScope: "",
    cacheLoss: "",
    changePrice: "", // the pending change's net price, the server's figures
    copied: "",
    etags: { agent: null, session: null },
    want: {},
    segments: [],
    query: everything(),
    shown: null,
    pendingCount: 0,
    page: 0,
    error: "",
    notice: "",
    saving: false,
    saveError: "",
    rowErrors: {},
    added: [],
    detail: null,
    tryMessage: "",
    trying: false,
    liveRun: null, // { step } while a run of this session is queued or running
    runEnded: false, // a run ended while changes were unsaved: the history moved on
    tryError: "",
    tryA: null, // the answer kept for comparison
    tryB: null, // the latest variant; a Try fills it and never touches A
    DEFERRED_WHY,

    async init() {
      try {
        this.session = await hango.get(`/v1/sessions/${this.id}`);
        const [agent, me] = await Promise.all([hango.get(`/v1/agents/${this.session.agent_id}`), hango.me()]);
        this.agentName = agent.name;
        this.canChangeAgent = hango.mayChangeAgent(me, agent);
        await this.reload();
      } catch (error) {
        this.missing = error.status === 404;
        this.error = hango.describe(error);
        return;
      }
      this.watchRun();
    },

    // A run in progress on this session: say so (and at which step), and reload once it ends,
    // unless there are unsaved changes (then say the history moved on).
    async watchRun() {
      try {
        const run = await hango.inFlight(this.id);
        if (!run) return;
        this.liveRun = { step: run.status === "queued" ? "queued, waiting for a worker" : "running" };
        await hango.follow(run.id, (step) => {
          this.liveRun.step = step;
        });
        this.liveRun = null;
        if (this.pendingCount) this.runEnded = true;
        else await this.reload();
      } catch {
        this.liveRun = null; // the panel works without the notice
      }
    },

    // Inspect and both override sets, as stored now; unsaved changes are dropped.
    async reload() {
      this.runEnded = false;
      const [snapshot, agentSet, sessionSet] = await Promise.all([
        hango.get(`/v1/sessions/${this.id}/context`),
        hango.send("GET", this.overridesPath("agent")),
        hango.send("GET", this.overridesPath("session")),
      ]);
      this.stored = { agent: agentSet.data.overrides, session: sessionSet.data.overrides };
      this.scope = agentSet.data.scope;
      this.etags = { agent: agentSet.headers.get("ETag"), session: sessionSet.headers.get("ETag") };
      this.snapshot = model.freeze(snapshot);
      this.current = this.snapshot;
      this.want = model.wantedFrom(snapshot, this.storedAll);
      if (this.detail && !this.want[this.detail.part.id]) this.detail = null; // the part is gone
      this.refilter();
      await this.recount();
    },

    // The rows the sort, filters and search show; paging starts again at the first page.
    refilter() {
      this.segments = model.segments(this.current);
      this.shown = model.freeze(model.view(this.current, this.query));
      this.page = Math.min(this.page, this.pages - 1);
    },

    topByTokens() {
      this.query = { ...everything(), sort: "tokens", top: TOP };
      this.page = 0;
      this.refilter();
    },

    showEverything() {
      this.query = everything();
      this.refilter();
    },

    get filtering() {
      return JSON.stringify(this.query) !== JSON.stringify(everything());
    },

    get toolNames() {
      return this.current.tools.map((part) => part.tools[0]);
    },

    // A share of the window as the bar and its legend print it.
    percent(tokens) {
      return `${(Math.round(this.share(tokens) * 10) / 10).toLocaleString("en")}%`;
    },

    // After every change of `want`: what it reaches and, from the server, the request as if saved.
    // Only the latest answer is shown (a later toggle makes an earlier preview moot).
    async recount() {
      const want = Alpine.raw(this.want);
      const pending = model.pending(this.snapshot, want, this.storedAll);
      this.pendingCount = pending.length;
      // Before Save: what an agent-level change reaches, so nobody changes 14 sessions by surprise.
      const agentChange = model.changed(this.snapshot, want, this.stored.agent, true);
      this.agentScope = agentChange ? `Saving changes the agent's parts: ${model.scopeText(this.scope)}.` : "";
      const ticket = ++this.previewTicket;
      this.saveError = "";
      this.rowErrors = {};
      if (!pending.length) {
        this.current = this.snapshot;
        this.cacheLoss = "";
        this.changePrice = "";
        this.previewing = false;
        this.refilter();
        return;
      }
      this.previewing = true;
      try {
        const body = model.proposal(this.snapshot, want, this.stored, null, false);
        const { data } = await hango.send("POST", `/v1/sessions/${this.id}/context/preview`, { body });
        if (ticket !== this.previewTicket) return;
        this.current = model.freeze(data);
        const loss = data.pending.cache_loss_tokens;
        this.cacheLoss = loss > 0
          ? `Saving breaks the cached prompt prefix: the next call no longer reads ${hango.number(loss)} tokens from the cache (they are written to it again).`
          : loss < 0
            ? `Saving restores the cached prompt prefix: the next call reads ${hango.number(-loss)} more tokens from the cache.`
            : "";
        this.changePrice = `Saving it: ${hango.changePrice(data.pending)}${hango.simulated(data.pending.simulated_at)}.`;
        this.refilter();
      } catch (error) {
        if (ticket === this.previewTicket) this.showError(error, "saveError");
      } finally {
        if (ticket === this.previewTicket) this.previewing = false;
      }
    },

    // Whether a part is sent with the unsaved changes: not unchecked here and, once the server's
    // preview of them is in, not left out because of another part (`excluded_by`).
    sent(part) {
      if (part.deferred) return false; // not sent until tool_search reveals it, whatever its box
      const state = this.want[part.id];
      return Boolean(state && state.on && (this.previewing || !part.excluded_by));
    },

    get storedAll() {
      return [...this.stored.agent, ...this.stored.session];
    },

    get pages() {
      return this.shown ? Math.max(1, Math.ceil(this.shown.messages.length / PAGE)) : 1;
    },

    rows(group) {
      const parts = this.shown[group];
      return group === "messages" ? parts.slice(this.page * PAGE, (this.page + 1) * PAGE) : parts;
    },

    // The Tools card's sections: by MCP server once one gives tools, with the preview's subtotals.
    toolSections() {
      return model.toolSections(this.current, this.rows("tools"));
    },

    // What the deferred tools save, over every source (the server's per-source figures, added up).
    get deferredTotal() {
      const sources = (this.current && this.current.tool_groups) || [];
      const add = (key) => sources.reduce((n, source) => n + (source[key] || 0), 0);
      return { deferred: add("deferred"), deferred_tokens: add("deferred_tokens") };
    },

    // "3 deferred · 1,234 tokens saved": a source's (or every source's) deferred tools.
    deferredWords(source) {
      return `${hango.number(source.deferred)} deferred · ${hango.number(source.deferred_tokens)} tokens saved`;
    },

    // A server's heading box: checked while its part (`tool:<server>/*`) is sent.
    sourceOn(source) {
      const state = this.want[source.part];
      return Boolean(state && state.on);
    },

    get pageLabel() {
      const count = this.shown.messages.length;
      const first = Math.min(count, this.page * PAGE + 1);
      return `${hango.number(first)}–${hango.number(Math.min(count, (this.page + 1) * PAGE))} of ${hango.number(count)}`;
    },

    canEdit(part) {
      if (part.deferred) return false; // the agent's deferral decides, and tool_search reveals it
      return !model.isAgentPart(part) || this.canChangeAgent;
    },

    // A share of the context window, for the bar.
    share(tokens) {
      return Math.max(0, Math.min(100, (100 * tokens) / this.snapshot.context_window));
    },

    toggle(part, on) {
      model.toggle(this.snapshot, this.want, part.id, on);
      this.notice = "";
      this.added = [];
      return this.recount();
    },

    // After a refused Save: drop the unsaved changes and show what is stored now.
    async startOver() {
      this.saveError = "";
      this.rowErrors = {};
      try {
        await this.reload();
      } catch (error) {
        this.saveError = hango.describe(error);
      }
    },

    discard() {
      this.want = model.wantedFrom(this.snapshot, this.storedAll);
      return this.recount();
    },

    // The override route of the agent's parts (system, tools) or of the session's.
    overridesPath(kind) {
      return kind === "agent" ? `/v1/agents/${this.session.agent_id}/context-overrides` : `/v1/sessions/${this.id}/context-overrides`;
    },

    // One save for both sets, each half with the ETag it was read with: both land or neither.
    // `want` defaults to every unsaved change; Save replacement passes the stored state plus one.
    async save(want = this.want) {
      this.saving = true;
      this.saveError = "";
      this.notice = "";
      this.rowErrors = {};
      try {
        const body = model.proposal(this.snapshot, Alpine.raw(want), this.stored, this.etags, false);
        const { data } = await hango.send("POST", `/v1/sessions/${this.id}/context/save`, { body });
        const added = [...data.agent.added, ...data.session.added];
        await this.reload();
        this.$dispatch("context-saved"); // the Optimize card reads its suggestions again
        this.added = added;
        const reach = body.agent ? ` The agent's set ${model.scopeText(data.agent.scope)}.` : "";
        const pulled = added.length ? ` The server also excluded ${added.join(", ")} to keep tool pairs whole.` : "";
        this.notice = `Saved.${reach}${pulled}`;
      } catch (error) {
        this.showError(error, "saveError");
      } finally {
        this.saving = false;
      }
    },

    // The exact body the agent's provider would be sent for the next call, on the clipboard.
    async copyRequest() {
      this.copied = "";
      try {
        const body = await hango.get(`/v1/sessions/${this.id}/context`, { format: this.snapshot.wire_format });
        await navigator.clipboard.writeText(JSON.stringify(body, null, 2));
        this.copied = `Copied the ${this.snapshot.wire_format} request body.`;
      } catch (error) {
        this.copied = `Could not copy the request: ${hango.describe(error)}`;
      }
    },

    // A 422 names its parts: the reason goes next to each of them, and above the table.
    showError(error, field) {
      this[field] = hango.describe(error);
      for (const part of error.parts || []) this.rowErrors[part] = `${error.message} (${error.code})`;
      const at = (id) => this.shown.messages.findIndex((p) => p.id === id);
      const first = (error.parts || []).find((part) => at(part) >= 0);
      if (first) this.page = Math.floor(at(first) / PAGE);
    },

    async open(part) {
      const state = this.want[part.id];
      this.detail = { part, loading: !part.stale, error: "", full: null, original: null, draft: "" };
      if (part.stale) return; // absent now: there is no content to show, only the waiting override
      try {
        const full = await hango.get(`/v1/sessions/${this.id}/context`, { full: part.id });
        const original = part.kind === "tool" ? null : model.textOf(full);
        this.detail = { ...this.detail, loading: false, full, original, draft: state.replacement ?? original ?? "" };
      } catch (error) {
        this.detail = { ...this.detail, loading: false, error: hango.describe(error) };
      }
    },

    get editable() {
      const detail = this.detail;
      return Boolean(detail && detail.full && detail.original !== null && !detail.part.stale && this.canEdit(detail.part));
    },

    // Saving an edit stores that one `replace` override; every other unsaved change stays unsaved.
    async saveReplacement() {
      await this.saveOnly(this.detail.part, this.detail.draft);
    },

    async dropReplacement() {
      await this.saveOnly(this.detail.part, null);
    },

    // Save `part` with `replacement` (null: none) on the stored sets, then put the other unsaved
    // changes back on top of what is stored now.
    async saveOnly(part, replacement) {
      const others = Alpine.raw(this.want);
      const only = model.wantedFrom(this.snapshot, this.storedAll);
      only[part.id] = { on: true, replacement, pairedFrom: null };
      await this.save(only);
      if (this.saveError) return;
      for (const [id, state] of Object.entries(others)) {
        if (id !== part.id && this.want[id]) this.want[id] = state;
      }
      await this.recount();
      await this.open(part);
    },

    // The first Try fills A; every later one fills B, next to it, until "Keep as A".
    async runTry() {
      this.trying = true;
      this.tryError = "";
      this.rowErrors = {};
      try {
        const body = model.tryBody(this.snapshot, this.want, this.storedAll, this.tryMessage);
        const result = (await hango.send("POST", `/v1/sessions/${this.id}/context/try`, { body })).data;
        const entry = model.freeze({ body, result });
        if (this.tryA) this.tryB = entry;
        else this.tryA = entry;
      } catch (error) {
        this.showError(error, "tryError");
      } finally {
        this.trying = false;
      }
    },

    get tryColumns() {
      return [["a", "A", this.tryA], ["b", "B", this.tryB]].filter(([, , entry]) => entry);
    },

    get tryDiff() {
      return this.tryA && this.tryB ? model.tryDiff(this.tryA, this.tryB) : null;
    },

    keepAsA() {
      this.tryA = this.tryB;
      this.tryB = null;
    },

    clearTries() {
      this.tryA = null;
      this.tryB = null;
    },
  }));
});
