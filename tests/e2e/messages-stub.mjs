// The Anthropic Messages API's answer, as a stub model writes it: the whole message as JSON, or (when the
// request asks to stream) the documented server-sent events, one content block after another.

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
