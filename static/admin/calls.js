// A session's past model calls: each with its tokens, cost and cache verdict, a stacked
// chart of tokens per call, one call's parts as sent, and two calls side by side. Every
// figure and word is the server's; content is rendered as text only.
document.addEventListener("alpine:init", () => {
  "use strict";

  const SVG = "http://www.w3.org/2000/svg";
  // Bottom to top: what the provider read from the cache, wrote to it, read uncached, and answered.
  const SEGMENTS = [
    ["cache_read", "cache_read_tokens"],
    ["cache_write", "cache_write_tokens"],
    ["uncached", "input_tokens"],
    ["output", "output_tokens"],
  ];
  const HEIGHT = 180; // the plot's height, bars to scale within it
  const MARK = 10; // room above the bars for a miss's marker
  // Room around the plot for the axes: tick labels on the left, the axis titles left and below.
  const LEFT = 64;
  const BOTTOM = 34;
  const RIGHT = 8;

  function element(name, attributes, text) {
    const node = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A round step (1, 2 or 5 times a power of ten) that splits 0..tallest into about four.
  function tickStep(tallest) {
    const raw = tallest / 4;
    const power = 10 ** Math.floor(Math.log10(raw));
    return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw);
  }

  // The y axis in tokens (ticks from 0 to the first round figure at or above the tallest bar,
  // with grid lines) and the x axis of calls, oldest on the left; both titled.
  function drawAxes(svg, top, scale, plotWidth, count) {
    const axes = element("g", { class: "axis" });
    const step = tickStep(top);
    for (let tokens = 0; tokens <= top; tokens += step) {
      const y = MARK + HEIGHT - tokens * scale;
      axes.append(element("line", { class: "grid", x1: LEFT, x2: LEFT + plotWidth, y1: y, y2: y }));
      axes.append(element("text", { "data-testid": "axis-y-tick", x: LEFT - 6, y: y + 4, "text-anchor": "end" }, hango.number(tokens)));
    }
    const base = MARK + HEIGHT;
    axes.append(element("line", { "data-testid": "axis-y", x1: LEFT, x2: LEFT, y1: MARK, y2: base }));
    axes.append(element("line", { "data-testid": "axis-x", x1: LEFT, x2: LEFT + plotWidth, y1: base, y2: base }));
    const middle = MARK + HEIGHT / 2;
    axes.append(element("text", { "data-testid": "axis-y-title", x: 12, y: middle, "text-anchor": "middle", transform: `rotate(-90 12 ${middle})` }, "tokens per call"));
    axes.append(element("text", { "data-testid": "axis-x-title", x: LEFT + plotWidth / 2, y: base + 24, "text-anchor": "middle" }, `calls, oldest to newest (${count})`));
    svg.append(axes);
  }

  // One <g> per call (oldest on the left), one <rect> per non-empty segment, heights to scale.
  function drawChart(svg, calls, onPick) {
    svg.replaceChildren();
    const plotWidth = Math.max(320, Math.min(960, calls.length * 28));
    const slot = plotWidth / Math.max(calls.length, 1);
    const tallest = Math.max(1, ...calls.map((c) => SEGMENTS.reduce((sum, [, key]) => sum + c.usage[key], 0)));
    const step = tickStep(tallest);
    const top = Math.ceil(tallest / step) * step;
    const scale = HEIGHT / top;
    const [width, height] = [LEFT + plotWidth + RIGHT, MARK + HEIGHT + BOTTOM];
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    drawAxes(svg, top, scale, plotWidth, calls.length);
    calls.forEach((call, index) => {
      const bar = element("g", { "data-testid": "bar", "data-call-id": call.id, class: `call-bar verdict-${call.cache.badge}` });
      const title = element("title", {}, `${hango.when(call.started_at)} · ${call.cache.words}`);
      bar.append(title);
      const left = LEFT + index * slot;
      let y = MARK + HEIGHT;
      for (const [name, key] of SEGMENTS) {
        const tokens = call.usage[key];
        if (!tokens) continue;
        const size = tokens * scale;
        y -= size;
        bar.append(element("rect", {
          class: `tokens ${name.replace("_", "-")}`, "data-segment": name, "data-tokens": tokens,
          x: left + slot * 0.15, y, width: slot * 0.7, height: size,
        }));
      }
      if (call.cache.badge === "miss") {
        const x = left + slot / 2;
        bar.append(element("path", { class: "miss-mark", "data-testid": "miss", d: `M${x - 5} 0 L${x + 5} 0 L${x} ${MARK - 2} Z` }));
      }
      bar.addEventListener("click", () => onPick(call));
      svg.append(bar);
    });
  }

  Alpine.data("callsPage", () => ({
    id: hango.ids().sessionId,
    session: null,
    agentName: "",
    missing: false,
    error: "",
    loaded: false,
    calls: [], // oldest first
    cost: null,
    opened: null,
    compareA: "",
    compareB: "",
    diff: null,
    left: null,
    right: null,

    async init() {
      if (!(await hango.loadInto(this, "session", `/v1/sessions/${this.id}`))) return;
      hango.get(`/v1/agents/${this.session.agent_id}`).then((agent) => { this.agentName = agent.name; }, () => { this.agentName = this.session.agent_id; });
      const listed = hango.list(`/v1/sessions/${this.id}/calls`, { limit: 1000 });
      const [cost] = await Promise.all([hango.get(`/v1/sessions/${this.id}/cost`).catch(() => null), listed.all()]);
      this.error = listed.error;
      this.cost = cost;
      this.calls = listed.items.slice().reverse();
      this.loaded = true;
      this.$nextTick(() => drawChart(this.$refs.chart, this.calls, (call) => this.open(call)));
    },

    newestFirst() {
      return this.calls.slice().reverse();
    },

    purpose: (call) => (call.purpose === "context_try" ? "try" : call.purpose),
    badgeClass: (call) => ({ hit: "ok", miss: "danger", first: "", none: "cache" })[call.cache.badge],

    costLine() {
      if (!this.cost) return "";
      const total = this.cost.usd === null ? "cost unknown" : hango.money(this.cost.usd);
      const unpriced = this.cost.priced_calls < this.cost.calls ? ` (${this.cost.calls - this.cost.priced_calls} unpriced: ${this.cost.unpriced_reason})` : "";
      return `· ${this.cost.calls} calls · ${total}${hango.simulated(this.cost.simulated_at)}${unpriced}`;
    },

    // Against the previous call (an opened call), or the other side of the comparison.
    partMark(which, part) {
      if (which === "opened") return hango.sinceMark(part);
      const first = this.diff.first_difference;
      if (first && first.part === part.id) return "first difference";
      if (this.diff.changed.includes(part.id)) return "changed";
      if (which === "right" && this.diff.added.includes(part.id)) return "added";
      if (which === "left" && this.diff.removed.includes(part.id)) return "removed";
      return "";
    },

    async open(call) {
      this.error = "";
      try {
        this.opened = await hango.get(`/v1/sessions/${this.id}/calls/${call.id}`);
      } catch (error) {
        this.error = hango.describe(error);
      }
    },

    async compare() {
      this.error = "";
      try {
        const base = `/v1/sessions/${this.id}`;
        const [diff, left, right] = await Promise.all([
          hango.get(`${base}/context/diff`, { from: this.compareA, to: this.compareB }),
          hango.get(`${base}/calls/${this.compareA}`),
          hango.get(`${base}/calls/${this.compareB}`),
        ]);
        [this.left, this.right, this.diff] = [left, right, diff];
      } catch (error) {
        this.error = hango.describe(error);
      }
    },
  }));
});
