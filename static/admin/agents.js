// Agents: the list with a create form, and one agent's settings, memory files and skills.
document.addEventListener("alpine:init", () => {
  "use strict";

  // A memory file's API path: /memories/a b.md → memories/a%20b.md, one segment at a time.
  const memoryUrl = (agentId, path) =>
    `/v1/agents/${agentId}/memory/${path.split("/").filter(Boolean).map(encodeURIComponent).join("/")}`;

  Alpine.data("agentsPage", () => ({
    agents: hango.list("/v1/agents", { limit: 100 }),
    form: { name: "", model: "offline/echo", system_prompt: "" },
    error: "",

    init() {
      this.agents.more();
    },

    async create() {
      this.error = "";
      try {
        const { data } = await hango.send("POST", "/v1/agents", { body: this.form });
        location.assign(`/admin/agents/${data.id}`);
      } catch (error) {
        this.error = hango.describe(error);
      }
    },
  }));

  Alpine.data("agentPage", () => ({
    id: hango.ids().agentId,
    agent: null,
    form: null,
    allTools: [],
    canWrite: false,
    missing: false,
    error: "",
    notice: "",
    armed: "",
    memory: null,
    file: null,
    skills: null,
    skill: null,

    async init() {
      try {
        const [agent, me, spec] = await Promise.all([
          hango.get(`/v1/agents/${this.id}`), hango.me(), hango.openapi(),
        ]);
        this.allTools = spec.components.schemas.Agent.properties.tools.items.enum;
        this.canWrite = hango.mayChangeAgent(me, agent);
        this.show(agent);
      } catch (error) {
        this.missing = error.status === 404;
        this.error = hango.describe(error);
        return;
      }
      this.memory = hango.list(`/v1/agents/${this.id}/memory`, { limit: 1000 });
      this.skills = hango.list(`/v1/agents/${this.id}/skills`, { limit: 1000 });
      await Promise.all([this.memory.more(), this.skills.more()]);
    },

    show(agent) {
      this.agent = agent;
      const { model, system_prompt, tools, context_window } = agent;
      this.form = { model, system_prompt, tools: [...tools], context_window };
    },

    // Run one change; report success or the API's reason in the page.
    async act(done, change) {
      this.error = "";
      this.notice = "";
      this.armed = "";
      try {
        await change();
        this.notice = done;
      } catch (error) {
        this.error = hango.describe(error);
      }
    },

    save() {
      return this.act("Agent saved.", async () => {
        const body = { ...this.form, context_window: Number(this.form.context_window) };
        this.show((await hango.send("PATCH", `/v1/agents/${this.id}`, { body })).data);
      });
    },

    async openFile(path) {
      await this.act("", async () => {
        const file = await hango.get(memoryUrl(this.id, path));
        this.file = { path: file.path, content: file.content, isNew: false };
      });
    },

    newFile() {
      this.file = { path: "/memories/", content: "", isNew: true };
    },

    saveFile() {
      return this.act("Memory file saved.", async () => {
        const body = { content: this.file.content };
        const { data } = await hango.send("PUT", memoryUrl(this.id, this.file.path), { body });
        this.file = { path: data.path, content: data.content, isNew: false };
        this.memory = hango.list(`/v1/agents/${this.id}/memory`, { limit: 1000 });
        await this.memory.more();
      });
    },

    deleteFile(path) {
      return this.act("Memory file deleted.", async () => {
        await hango.send("DELETE", memoryUrl(this.id, path));
        this.memory.items = this.memory.items.filter((entry) => entry.path !== path);
        if (this.file && this.file.path === path) this.file = null;
      });
    },

    async openSkill(name) {
      await this.act("", async () => {
        const skill = await hango.get(`/v1/agents/${this.id}/skills/${encodeURIComponent(name)}`);
        const { description, body, allowed_tools } = skill;
        this.skill = { name, description, body, allowed_tools: [...allowed_tools], isNew: false };
      });
    },

    newSkill() {
      this.skill = { name: "", description: "", body: "", allowed_tools: [], isNew: true };
    },

    saveSkill() {
      return this.act("Skill saved.", async () => {
        const { name, description, body, allowed_tools, isNew } = this.skill;
        const fields = { description, body, allowed_tools };
        if (isNew) await hango.send("POST", `/v1/agents/${this.id}/skills`, { body: { name, ...fields } });
        else await hango.send("PUT", `/v1/agents/${this.id}/skills/${encodeURIComponent(name)}`, { body: fields });
        this.skill.isNew = false;
        this.skills = hango.list(`/v1/agents/${this.id}/skills`, { limit: 1000 });
        await this.skills.more();
      });
    },

    deleteSkill(name) {
      return this.act("Skill deleted.", async () => {
        await hango.send("DELETE", `/v1/agents/${this.id}/skills/${encodeURIComponent(name)}`);
        this.skills.items = this.skills.items.filter((entry) => entry.name !== name);
        if (this.skill && this.skill.name === name) this.skill = null;
      });
    },
  }));
});
