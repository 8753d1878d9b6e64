/** Stand-ins for what tests cannot run here: model APIs, agents that replay real transcripts. */
export * from './mock-anthropic.js';
export * from './mock-openai.js';
export * from './mock-gemini.js';
export * from './model-stand-in.js';
export * from './stand-in-agents.js';
export * from './otlp-receiver.js';
