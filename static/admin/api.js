// The admin page's only way to the server: the public /v1 API, with the API key
// from session storage in the Authorization header. The key never goes into a URL,
// the page, or the console.
(() => {
  "use strict";

  const KEY = "hango.apiKey";
  const SIGN_IN = "/admin/";

  class ApiError extends Error {
    constructor(status, body, headers) {
      const error = (body && body.error) || {};
      super(error.message || `HTTP ${status}`);
      this.status = status;
      this.code = error.code || "http_error";
      this.details = error.details || null;
      this.retryAfter = headers ? headers.get("Retry-After") : null;
    }

    // The parts a 422 names, so the page can show the reason next to them.
    get parts() {
      return (this.details && Array.isArray(this.details.parts)) ? this.details.parts : [];
    }
  }

  // What to tell a person about a failed request.
  function describe(error) {
    if (!(error instanceof ApiError)) return "hango cannot be reached. Check the server and try again.";
    switch (error.status) {
      case 402: return "The tenant's token quota for this month is used up.";
      case 404: return "Not found: it does not exist, or it is not yours to see.";
      case 409: return `Conflict: ${error.message}.`;
      case 412: return "Changed elsewhere since this page loaded it. Reload to see the current state.";
      case 429: return `Too many requests for this API key. Try again in ${error.retryAfter || "a few"} seconds.`;
      case 503: return `hango is busy (${error.message}). Try again in ${error.retryAfter || "a few"} seconds.`;
      case 504: return `No answer in time: ${error.message}.`;
      default: return `${error.message} (${error.code}, HTTP ${error.status}).`;
    }
  }

  // Off to the sign-in form, back here afterwards. The promise never settles: the page is
  // going away, and no caller should flash an error in the meantime.
  function toSignIn() {
    sessionStorage.removeItem(KEY);
    location.assign(SIGN_IN + query({ next: location.pathname }));
    return new Promise(() => {});
  }

  async function request(method, path, { body, headers } = {}) {
    const key = sessionStorage.getItem(KEY);
    if (!key && location.pathname !== SIGN_IN) return toSignIn();
    const sent = { Authorization: `Bearer ${key}`, Accept: "application/json", ...headers };
    if (body !== undefined) sent["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method,
      headers: sent,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
    const data = response.status === 204 ? null : await response.json().catch(() => null);
    if (response.status === 401 && location.pathname !== SIGN_IN) return toSignIn();
    if (!response.ok) throw new ApiError(response.status, data, response.headers);
    return { data, headers: response.headers };
  }

  function query(params) {
    const kept = Object.entries(params).filter(([, value]) => value !== null && value !== undefined && value !== "");
    return kept.length ? `?${new URLSearchParams(kept)}` : "";
  }

  // A cursor-paged list: the items so far, and more() for the next page. Message
  // history pages by seq (after_seq); every other list by an opaque cursor.
  function list(path, params = {}, cursorParam = "cursor") {
    return {
      items: [],
      cursor: null,
      done: false,
      loading: false,
      error: "",
      async more() {
        this.loading = true;
        this.error = "";
        try {
          const page = (await request("GET", path + query({ ...params, [cursorParam]: this.cursor }))).data;
          this.items.push(...page.items);
          this.cursor = page.next_cursor;
          this.done = !page.next_cursor;
        } catch (error) {
          this.error = describe(error);
        } finally {
          this.loading = false;
        }
      },
      async all() {
        while (!this.done && !this.error) await this.more();
      },
    };
  }

  let me = null;
  let openapi = null;

  function signOut() {
    sessionStorage.removeItem(KEY);
    location.assign(SIGN_IN);
  }

  window.hango = {
    describe,
    list,
    signOut,
    hasKey: () => Boolean(sessionStorage.getItem(KEY)),
    setKey: (key) => sessionStorage.setItem(KEY, key),
    forgetKey: () => sessionStorage.removeItem(KEY),
    get: async (path, params = {}) => (await request("GET", path + query(params))).data,
    // Load the object a page is about into page[name]; on failure say why (missing: a 404). True when loaded.
    loadInto: async (page, name, path) => {
      try {
        page[name] = (await request("GET", path)).data;
        return true;
      } catch (error) {
        page.missing = error.status === 404;
        page.error = describe(error);
        return false;
      }
    },
    send: request,
    // GET /v1/me once per page load: who is signed in, in which tenant, with which role.
    me: () => (me = me || request("GET", "/v1/me").then((r) => r.data, (error) => {
      me = null;
      throw error;
    })),
    // The API's own description (public): the enums the forms offer, such as tool names.
    openapi: () => (openapi = openapi || fetch("/openapi.json", { credentials: "omit" }).then((r) => r.json())),
    isAdmin: (who) => who.role === "owner" || who.role === "admin",
    mayChangeAgent: (who, agent) => who.role === "owner" || who.role === "admin" || agent.owner_id === who.user_id,
    // The ids of the page (from its URL), which the template sets on <main>.
    ids: () => ({ ...document.getElementById("main").dataset }),
    number: (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US")),
    when: (iso) => (iso ? new Date(iso).toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" }) : "–"),
    json: (value) => JSON.stringify(value, null, 2),
    // US dollars by the one rule of every surface (hango/cli/money.py says it, the CLI follows it too):
    // under $1 four significant digits, trailing zeros dropped, at least two decimals; from $1 cents;
    // ties rounded away from zero on the exact value (toExponential and toFixed do); "–" when unknown.
    money: (usd) => {
      if (usd === null || usd === undefined) return "–";
      const sign = usd < 0 ? "-" : "";
      const size = Math.abs(usd);
      if (size >= 1) return `${sign}$${size.toFixed(2)}`;
      if (size === 0) return "$0.00";
      const [mantissa, power] = size.toExponential(3).split("e");
      const digits = mantissa.replace(".", "");
      const exponent = Number(power); // 0 only when the figure rounds up to 1.000
      const fixed = exponent < 0 ? `0.${"0".repeat(-exponent - 1)}${digits}` : `${digits[0]}.${digits.slice(1)}`;
      const [whole, decimals] = fixed.split(".");
      return `${sign}$${whole}.${decimals.replace(/0+$/, "").padEnd(2, "0")}`;
    },
    // The label of a simulated price (a cost's `simulated_at`: the reference model whose prices it is at), or "".
    simulated: (model) => (model ? ` (simulated at ${model} prices)` : ""),
    // money(usd) labelled as simulated when it is (a known price only), as the CLI's priced().
    priced: (usd, model) => hango.money(usd) + (usd === null || usd === undefined ? "" : hango.simulated(model)),
    // Inspect's next call: its cost and predicted cache verdict, in the CLI's words (next_call_line).
    nextCall: (inspect) => `next call: input ${hango.priced(inspect.next_call_cost.usd, inspect.next_call_cost.simulated_at)}`
      + ` · cache ${inspect.cache.badge}: ${inspect.cache.words}`,
    // A change's cache loss in dollars, as the CLI's once_in_cache: a negative loss restores the cache.
    onceInCache: (usd) => (usd !== null && usd !== undefined && usd < 0
      ? `${hango.money(-usd)} back once in cache` : `${hango.money(usd)} once in cache`),
    // A change's cache loss in tokens, as the CLI's cache_cost.
    cacheCost: (tokens) => (tokens < 0 ? `cache gain ${hango.number(-tokens)}` : `cache cost ${hango.number(tokens)}`),
    // A change's net price (a suggestion's or the preview's), in the CLI's words (change_price).
    changePrice: (change) => {
      const said = `${hango.money(change.usd_saved_per_call)} a call, ${hango.onceInCache(change.usd_cache_loss)}, `;
      const calls = change.break_even_calls;
      if (calls === null || calls === undefined) {
        return said + (change.usd_saved_per_call === null ? "price unknown" : "never pays back");
      }
      return said + (calls === 0 ? "nothing to pay back" : `pays back after ${hango.number(calls)} call${calls > 1 ? "s" : ""}`);
    },
    // A part of a past call against the previous call of its lineage: "added", "changed" or "" (same, or the first).
    sinceMark: (part) => (part.since_previous === "same" || !part.since_previous ? "" : part.since_previous),
    markClass: (mark) => ({ added: "ok", changed: "warn", removed: "danger", "first difference": "danger" })[mark] || "",
    // A fresh Idempotency-Key, so a retried send never starts a second run.
    idempotencyKey: () => Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join(""),
  };
})();
