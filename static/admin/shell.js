// The frame of every admin page (who is signed in, sign-out) and the sign-in form.
document.addEventListener("alpine:init", () => {
  "use strict";

  // Where to go after signing in: a page of the admin site, never another origin.
  function nextPage() {
    const next = new URLSearchParams(location.search).get("next") || "";
    return next.startsWith("/admin/") && !next.startsWith("//") ? next : "/admin/sessions";
  }

  Alpine.data("shell", () => ({
    me: null,
    error: "",

    // Without a key (or with a refused one) the API client sends the tab to the sign-in form.
    async init() {
      try {
        this.me = await hango.me();
      } catch (error) {
        this.error = hango.describe(error);
      }
    },

    get isAdmin() {
      return Boolean(this.me && hango.isAdmin(this.me));
    },

    signOut() {
      hango.signOut();
    },
  }));

  Alpine.data("signIn", () => ({
    key: "",
    error: "",
    busy: false,

    init() {
      if (hango.hasKey()) this.check();
    },

    async submit() {
      hango.setKey(this.key.trim());
      this.key = "";
      await this.check();
    },

    async check() {
      this.busy = true;
      this.error = "";
      try {
        await hango.me();
        location.assign(nextPage());
      } catch (error) {
        hango.forgetKey();
        this.error = error.status === 401 ? "This API key is not valid." : hango.describe(error);
      } finally {
        this.busy = false;
      }
    },
  }));
});
