// A stub of the OpenAI Responses API (`POST /v1/responses`, streamed as server-sent events) for Codex,
// scripted for one coding turn: the first request asks for the session's `report_status` and a shell command
// (`echo hi > out.txt`); a request carrying their outputs gets "done: N tool outputs"; a message saying
// "second turn" is answered with how many input items it saw (a resumed thread sends the earlier ones too).
//
// Codex 0.171 offers MCP tools as a `namespace` tool, or defers them behind `tool_search` for models that
// search: then the stub first emits a `tool_search_call` and Codex answers with the namespace.
import { createServer } from 'node:http';

const SHELL_TOOLS = ['exec_command', 'shell_command', 'shell', 'local_shell'];

export function responsesStub() {
  const seen = [];
  let n = 0;
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      let body = {};
      try { body = raw ? JSON.parse(raw) : {}; } catch { /* not JSON */ }
      if (req.method === 'GET' && req.url.startsWith('/v1/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [], models: [] }));
        return;
      }
      if (req.method !== 'POST' || !req.url.startsWith('/v1/responses')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'stub: not found', type: 'not_found' } }));
        return;
      }
      n += 1;
      const input = body.input ?? [];
      seen.push({ items: input.length });
      stream(res, body, `resp_stub_${n}`, script(body, input, n));
    });
  });
  return { server, seen };
}

/** The output items for this request. */
function script(body, input, n) {
  let lastUser = -1;
  input.forEach((it, i) => { if (it.type === 'message' && it.role === 'user') lastUser = i; });
  const after = input.slice(lastUser + 1);
  const outputs = after.filter((it) => it.type === 'function_call_output' || it.type === 'custom_tool_call_output');
  const text = lastUser >= 0 ? (input[lastUser].content ?? []).map((c) => c.text ?? '').join('\n') : '';
  const say = (t) => [{ type: 'message', role: 'assistant', id: `msg_stub_${n}`, status: 'completed', content: [{ type: 'output_text', text: t, annotations: [] }] }];
  if (outputs.length) return say(`done: ${outputs.length} tool outputs`);
  if (/second turn/.test(text)) return say(`second turn: I see ${input.length} input items`);
  const tools = body.tools ?? [];
  const names = tools.map((t) => t.name ?? t.type);
  const found = after.find((it) => it.type === 'tool_search_output');
  const withStatus = (list) => (list ?? []).find((t) => t.type === 'namespace' && (t.tools ?? []).some((f) => f.name === 'report_status'));
  const ns = withStatus(tools) ?? withStatus(found?.tools);
  if (!ns && tools.some((t) => t.type === 'tool_search') && !found) {
    return [{ type: 'tool_search_call', id: `ts_stub_${n}`, call_id: `call_stub_search_${n}`, status: 'completed', execution: 'client', arguments: { query: 'agentsky report_status', limit: 8 } }];
  }
  const items = [];
  if (ns) {
    items.push({ type: 'function_call', id: `fc_status_${n}`, call_id: `call_status_${n}`, name: 'report_status', namespace: ns.name, arguments: JSON.stringify({ note: 'starting' }), status: 'completed' });
  }
  const shell = SHELL_TOOLS.find((t) => names.includes(t));
  if (shell) {
    const args = shell === 'exec_command' ? { cmd: 'echo hi > out.txt' }
      : shell === 'shell_command' ? { command: 'echo hi > out.txt' } : { command: ['bash', '-lc', 'echo hi > out.txt'] };
    items.push({ type: 'function_call', id: `fc_shell_${n}`, call_id: `call_shell_${n}`, name: shell, arguments: JSON.stringify(args), status: 'completed' });
  }
  return items.length ? items : say('stub: no tools offered');
}

/** Writes `items` as the Responses API's event stream. */
function stream(res, body, id, items) {
  const usage = { input_tokens: 1200, input_tokens_details: { cached_tokens: 800 }, output_tokens: 40, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1240 };
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let seq = 0;
  const send = (data) => res.write(`event: ${data.type}\ndata: ${JSON.stringify({ ...data, sequence_number: seq++ })}\n\n`);
  const base = { id, object: 'response', created_at: Math.floor(Date.now() / 1000), model: body.model, status: 'in_progress', output: [] };
  send({ type: 'response.created', response: base });
  items.forEach((item, i) => {
    const added = item.type === 'function_call' ? { ...item, arguments: '', status: 'in_progress' }
      : item.type === 'message' ? { ...item, content: [], status: 'in_progress' } : item;
    send({ type: 'response.output_item.added', output_index: i, item: added });
    if (item.type === 'message') {
      const part = item.content[0];
      send({ type: 'response.content_part.added', output_index: i, item_id: item.id, content_index: 0, part: { ...part, text: '' } });
      send({ type: 'response.output_text.delta', output_index: i, item_id: item.id, content_index: 0, delta: part.text });
      send({ type: 'response.output_text.done', output_index: i, item_id: item.id, content_index: 0, text: part.text });
      send({ type: 'response.content_part.done', output_index: i, item_id: item.id, content_index: 0, part });
    } else if (item.type === 'function_call') {
      send({ type: 'response.function_call_arguments.delta', output_index: i, item_id: item.id, delta: item.arguments });
      send({ type: 'response.function_call_arguments.done', output_index: i, item_id: item.id, arguments: item.arguments });
    }
    send({ type: 'response.output_item.done', output_index: i, item });
  });
  send({ type: 'response.completed', response: { ...base, status: 'completed', output: items, usage } });
  res.end();
}
