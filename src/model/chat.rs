//! Chat templates: the `tokenizer.chat_template` a GGUF carries (Jinja, as Hugging Face
//! writes them) rendered with `minijinja` over a conversation, so `chat(messages)` gives the
//! prompt text the model was trained on. The environment is the one `transformers`'
//! `apply_chat_template` uses: `trim_blocks` and `lstrip_blocks`, Python's string methods
//! (`.strip()`, `.startswith()`, ...: minijinja-contrib's pycompat), `raise_exception(msg)`,
//! and the variables `messages`, `add_generation_prompt`, `bos_token` and `eos_token`.
//! minijinja is picked over rendering in JS (`@huggingface/jinja`) so that native tests check
//! the same renderer the page runs, against Python's jinja2 on the same templates
//! (scripts/chat-template-vectors.py).

use minijinja::{Environment, ErrorKind, Value};

use crate::error::{At, Error, ModelFile, Result};
use crate::model::gguf::Gguf;

/// How `raise_exception`'s errors are told from the template's own failures.
const RAISED: &str = "raise_exception: ";

/// The metadata key holding the template.
pub const TEMPLATE_KEY: &str = "tokenizer.chat_template";

/// One turn of a conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatMessage {
    /// "system", "user", "assistant" (or what the template knows).
    pub role: String,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A message of `role` saying `content`.
    pub fn new(role: &str, content: &str) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// A model's chat template, checked to compile.
#[derive(Clone, Debug)]
pub struct ChatTemplate {
    source: String,
    bos: String,
    eos: String,
}

fn template_err(what: impl Into<String>) -> Error {
    Error::model_at(ModelFile::Decoder, At::Key(TEMPLATE_KEY.into()), what)
}

fn environment(source: &str) -> std::result::Result<Environment<'_>, minijinja::Error> {
    let mut env = Environment::new();
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()?,
    );
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_function(
        "raise_exception",
        |msg: String| -> std::result::Result<String, minijinja::Error> {
            Err(minijinja::Error::new(
                ErrorKind::InvalidOperation,
                format!("{RAISED}{msg}"),
            ))
        },
    );
    env.add_template("chat", source)?;
    Ok(env)
}

impl ChatTemplate {
    /// A template from its source, with the texts of the BOS and EOS tokens (the variables
    /// `bos_token`, `eos_token`); a template that does not compile is an Error saying where.
    pub fn new(source: &str, bos: &str, eos: &str) -> Result<Self> {
        environment(source).map_err(|e| template_err(format!("does not compile: {e:#}")))?;
        Ok(Self {
            source: source.into(),
            bos: bos.into(),
            eos: eos.into(),
        })
    }

    /// The template of a GGUF file (`None` when it has none), with `bos`/`eos` the token
    /// texts of its BOS and EOS.
    pub fn from_gguf(g: &Gguf, bos: &str, eos: &str) -> Result<Option<Self>> {
        match g.get(TEMPLATE_KEY) {
            None => Ok(None),
            Some(v) => {
                let source = v.as_str().ok_or_else(|| template_err("must be a string"))?;
                Self::new(source, bos, eos).map(Some)
            }
        }
    }

    /// The template's source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The prompt text of `messages`; with `add_generation_prompt`, ending where the
    /// assistant's answer begins. A template that raises (`raise_exception`, e.g. roles out
    /// of order) or fails is an Error with its message.
    pub fn render(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String> {
        let env = environment(&self.source).map_err(|e| template_err(format!("{e:#}")))?;
        let t = env
            .get_template("chat")
            .map_err(|e| template_err(format!("{e:#}")))?;
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| {
                Value::from_pairs([("role", m.role.as_str()), ("content", m.content.as_str())])
            })
            .collect();
        t.render(minijinja::context! {
            messages => messages,
            add_generation_prompt => add_generation_prompt,
            bos_token => &self.bos,
            eos_token => &self.eos,
        })
        .map_err(|e| match e.detail().and_then(|d| d.strip_prefix(RAISED)) {
            Some(why) => {
                Error::InvalidArgument(format!("the chat template refused the conversation: {why}"))
            }
            None => template_err(format!("{e:#}")),
        })
    }
}
