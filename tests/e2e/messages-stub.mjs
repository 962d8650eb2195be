// The Anthropic Messages API as a stub model serves it: a loopback server that answers `count_tokens` and
// the API's 404 itself and hands each `POST /v1/messages` to the test, and the answer written as the API
// does: the whole message as JSON, or (when the request asks to stream) the documented server-sent
// events, one content block after another.
import { createServer } from 'node:http';

/** A Messages API server: each `POST /v1/messages` goes to `answer(req, res, body)` with its body parsed;
 * `count_tokens` gets a fixed count, anything else the API's 404. `seen`, when given, gets every request
 * first. Listen on it yourself. */
export function messagesServer(answer, seen) {
  return createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      let body = {};
      try { body = raw ? JSON.parse(raw) : {}; } catch { /* not JSON */ }
      seen?.push({ method: req.method, url: req.url, body });
      if (req.method !== 'POST' || !req.url.startsWith('/v1/messages')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'stub' } }));
        return;
      }
      if (req.url.startsWith('/v1/messages/count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ input_tokens: 10 }));
        return;
      }
      answer(req, res, body);
    });
  });
}

/** Answers `body` (a Messages request) with `content` blocks (text or tool_use) and `usage`. */
export function answerMessages(res, body, content, usage = { input_tokens: 10, output_tokens: 5 }) {
  const stop = content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';
  const message = {
    id: `msg_stub_${Date.now()}`, type: 'message', role: 'assistant', model: body.model ?? 'stub',
    content, stop_reason: stop, stop_sequence: null, usage,
  };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(message));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
  send('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 0 } } });
  content.forEach((block, index) => {
    if (block.type === 'text') {
      send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      send('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
    } else {
      send('content_block_start', { index, content_block: { ...block, input: {} } });
      send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    }
    send('content_block_stop', { index });
  });
  send('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
  send('message_stop', {});
  res.end();
}
