// Following a queued run: poll its steps (GET /v1/runs/{id}/events?after=N) until it ends,
// the same loop docs/learning/background-runs.md shows a client. Shared by the session page
// (History shows the run live, with Cancel) and the Context panel (a run is in progress).
(() => {
  const ENDED = ["completed", "max_turns", "quota_exhausted", "failed", "timeout", "cancelled"];
  const POLL_MS = 1000;

  function describeStep(step) {
    const d = step.detail || {};
    switch (step.kind) {
      case "run_started": return "started";
      case "model_call_started": return `calling ${d.model}…`;
      case "model_call_finished": return `model answered (${hango.number(d.usage && d.usage.input_tokens)} in, ${hango.number(d.usage && d.usage.output_tokens)} out)`;
      case "tool_started": return `running tool ${d.name}…`;
      case "tool_finished": return `tool ${d.name} done${d.error ? " (error)" : ""}`;
      case "message_stored": return `stored #${d.seq} ${d.role}`;
      case "compaction": return `compacted through #${d.through_seq}`;
      case "error": return `error: ${d.message}`;
      case "run_finished": return d.status;
      default: return step.kind;
    }
  }

  // Poll ``runId``'s steps, telling ``onStep(text, status)`` each one; resolves with the ended run.
  async function follow(runId, onStep, stillWanted = () => true) {
    let after = 0;
    while (stillWanted()) {
      const page = await hango.get(`/v1/runs/${runId}/events`, { after });
      for (const step of page.items) onStep(describeStep(step), page.status);
      after = page.next_after;
      if (ENDED.includes(page.status)) return hango.get(`/v1/runs/${runId}`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    return null;
  }

  // The session's run still queued or running, if any (the newest of its runs). A try run
  // (kind "try", a whole turn on a scratch copy) is left out: it changes nothing of the session.
  async function inFlight(sessionId) {
    const page = await hango.get(`/v1/sessions/${sessionId}/runs`, { limit: 1000 });
    return page.items.reverse().find((run) => !ENDED.includes(run.status) && run.kind !== "try") || null;
  }

  Object.assign(window.hango, { ENDED, describeStep, follow, inFlight });
})();
