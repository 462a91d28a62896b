//! Search that understands meaning, natively (issues 40 and 61): the sentence encoder (`encoder`,
//! over a BERT forward pass of its own), models named by Hugging Face id and fetched (`hub`), the
//! tools' vectors made off the path of requests (`meaning`), and the OpenAI-compatible
//! `/v1/embeddings` endpoint (`embeddings`). The ranking itself is the core's (`mcp_sieve::search`).

pub(crate) mod embeddings;
pub mod encoder;
pub(crate) mod hub;
pub mod meaning;
