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

    async init() {
      if (!(await hango.loadInto(this, "session", `/v1/sessions/${this.id}`))) return;
      this.history = hango.list(`/v1/sessions/${this.id}/messages`, { limit: 200 }, "after_seq");
      this.runs = hango.list(`/v1/sessions/${this.id}/runs`, { limit: 100 });
      await Promise.all([this.history.more(), this.runs.more(), this.loadAgent(), this.loadMarks()]);
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

    // Send a user message: the agent runs, and the run's new messages join the history.
    async send() {
      this.sending = true;
      this.sendError = "";
      try {
        const { data } = await hango.send("POST", `/v1/sessions/${this.id}/messages`, {
          body: { content: this.text },
          headers: { "Idempotency-Key": hango.idempotencyKey() },
        });
        this.text = "";
        if (this.history.done) this.history.items.push(...data.messages);
        else await this.history.all();
        this.runs.items.push(data.run);
        await this.loadMarks();
      } catch (error) {
        this.sendError = hango.describe(error);
      } finally {
        this.sending = false;
      }
    },
  }));
});
