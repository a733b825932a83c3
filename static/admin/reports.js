// Usage (this month's tokens by purpose and model, quota left) and the audit log.
document.addEventListener("alpine:init", () => {
  "use strict";

  const TOKENS = ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"];

  Alpine.data("usagePage", () => ({
    usage: null,
    purpose: "",
    model: "",
    error: "",

    async init() {
      try {
        this.usage = await hango.get("/v1/usage");
      } catch (error) {
        this.error = hango.describe(error);
      }
    },

    choices(field) {
      return this.usage ? [...new Set(this.usage.totals.map((row) => row[field]))].sort() : [];
    },

    get rows() {
      if (!this.usage) return [];
      return this.usage.totals.filter((row) => (!this.purpose || row.purpose === this.purpose)
        && (!this.model || row.model === this.model));
    },

    get shownTokens() {
      return this.rows.reduce((sum, row) => sum + TOKENS.reduce((s, name) => s + row[name], 0), 0);
    },

    // How much of the quota is used, as a percentage for the bar (0 when unlimited).
    get usedShare() {
      const { used_tokens: used, token_quota: quota } = this.usage || {};
      return quota ? Math.min(100, (100 * used) / quota) : 0;
    },
  }));

  Alpine.data("auditPage", () => ({
    actions: [],
    filters: { action: "", object_type: "", object_id: "" },
    entries: null,
    forbidden: false,

    async init() {
      const spec = await hango.openapi();
      const action = spec.paths["/v1/audit"].get.parameters.find((p) => p.name === "action");
      this.actions = action.schema.enum.filter(Boolean);
      await this.apply();
    },

    async apply() {
      this.entries = hango.list("/v1/audit", { limit: 100, ...this.filters });
      await this.entries.more();
      this.forbidden = this.entries.error.startsWith("Not found");
    },

    clear() {
      this.filters = { action: "", object_type: "", object_id: "" };
      return this.apply();
    },
  }));
});
