// Sessions: the list (a member's own, everyone's for owners and admins) and one
// session's history, runs and message box.
document.addEventListener("alpine:init", () => {
  "use strict";

  // Agent names by id, for lists that only carry agent_id.
  async function agentNames() {
    const agents = hango.list("/v1/agents", { limit: 1000 });
    await agents.all();
    return { agents: agents.items, names: Object.fromEntries(agents.items.map((a) => [a.id, a.name])) };
  }

  Alpine.data("sessionsPage", () => ({
    sessions: hango.list("/v1/sessions", { limit: 100 }),
    agents: [],
    names: {},
    agentFilter: "",
    newAgent: "",
    newTitle: "",
    error: "",

    async init() {
      ({ agents: this.agents, names: this.names } = await agentNames().catch((error) => {
        this.error = hango.describe(error);
        return { agents: [], names: {} };
      }));
      this.newAgent = this.agents.length ? this.agents[0].id : "";
      await this.sessions.more();
    },

    async filter() {
      this.sessions = hango.list("/v1/sessions", { limit: 100, agent_id: this.agentFilter });
      await this.sessions.more();
    },

    async create() {
      this.error = "";
      try {
        const { data } = await hango.send("POST", "/v1/sessions", { body: { agent_id: this.newAgent, title: this.newTitle } });
        location.assign(`/admin/sessions/${data.id}`);
      } catch (error) {
        this.error = hango.describe(error);
      }
    },
  }));

  Alpine.data("sessionPage", () => ({
    id: hango.ids().sessionId,
    session: null,
    agentName: "",
    missing: false,
    error: "",
    history: null,
    runs: null,
    text: "",
    sending: false,
    sendError: "",
    marks: {},
    live: null, // the run queued or running now: { run, step }
    cancelling: false,

    async init() {
      if (!(await hango.loadInto(this, "session", `/v1/sessions/${this.id}`))) return;
      this.history = hango.list(`/v1/sessions/${this.id}/messages`, { limit: 200 }, "after_seq");
      this.runs = hango.list(`/v1/sessions/${this.id}/runs`, { limit: 100 });
      await Promise.all([this.history.more(), this.runs.more(), this.loadAgent(), this.loadMarks()]);
      const running = await hango.inFlight(this.id);
      if (running) this.follow(running);
    },

    // Show ``run`` live until it ends; then its messages join the history and its row updates.
    async follow(run) {
      this.live = { run, step: run.status === "queued" ? "queued, waiting for a worker" : "running" };
      this.cancelling = false;
      try {
        const ended = await hango.follow(run.id, (step, status) => {
          this.live.step = step;
          this.live.run = { ...this.live.run, status };
        });
        if (this.history.done) this.history.items.push(...ended.messages);
        else await this.history.all();
        const { messages, ...row } = ended;
        const index = this.runs.items.findIndex((r) => r.id === row.id);
        if (index >= 0) this.runs.items.splice(index, 1, row);
        else this.runs.items.push(row);
        if (ended.error) this.sendError = `${ended.error.message} (${ended.error.code})`;
        await this.loadMarks();
      } catch (error) {
        this.sendError = hango.describe(error);
      } finally {
        this.live = null;
      }
    },

    async cancel() {
      this.cancelling = true;
      try {
        await hango.send("POST", `/v1/runs/${this.live.run.id}/cancel`, { body: {} });
      } catch (error) {
        this.sendError = hango.describe(error);
      }
    },

    // What the next call does with each message, as inspect says: left out (alone or as a
    // tool pair companion) or sent with a replacement. Sent as stored: no mark.
    async loadMarks() {
      try {
        const snapshot = await hango.get(`/v1/sessions/${this.id}/context`);
        const marks = {};
        for (const part of snapshot.messages) {
          if (!part.included) marks[part.id] = part.paired ? "excluded with its tool pair" : "excluded from the next call";
          else if (part.override === "replace") marks[part.id] = "replaced in the next call";
        }
        this.marks = marks;
      } catch {
        this.marks = {}; // the history reads without the marks
      }
    },

    mark(message) {
      return this.marks[`message:${message.seq}`] || "";
    },

    async loadAgent() {
      try {
        this.agentName = (await hango.get(`/v1/agents/${this.session.agent_id}`)).name;
      } catch {
        this.agentName = this.session.agent_id;
      }
    },

    // Send a user message: the run is queued (202), then followed live until it ends.
    async send() {
      this.sending = true;
      this.sendError = "";
      try {
        const { data } = await hango.send("POST", `/v1/sessions/${this.id}/messages`, {
          body: { content: this.text },
          headers: { "Idempotency-Key": hango.idempotencyKey() },
        });
        this.text = "";
        const { messages, ...run } = data;
        this.runs.items.push(run);
        this.sending = false;
        await this.follow(run);
      } catch (error) {
        this.sendError = hango.describe(error);
      } finally {
        this.sending = false;
      }
    },
  }));
});
