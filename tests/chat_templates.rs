//! Chat templates rendered by minijinja (`model::chat`) exactly as Python's jinja2 renders
//! them the Hugging Face way (tests/reference/chat_templates.json, written by
//! scripts/chat-template-vectors.py from the vocab files' `tokenizer.chat_template` and Llama
//! 3's): the same text for every conversation, with and without the generation prompt, and an
//! Error where the template raises.
#![cfg(not(target_arch = "wasm32"))]

use webtensor::model::chat::{ChatMessage, ChatTemplate};

#[test]
fn templates_render_as_jinja2_does() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/reference/chat_templates.json"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut bad = Vec::new();
    let mut n = 0;
    for case in j["cases"].as_array().unwrap() {
        let name = case["template"].as_str().unwrap();
        let t = &j["templates"][name];
        let template = ChatTemplate::new(
            t["source"].as_str().unwrap(),
            t["bos"].as_str().unwrap(),
            t["eos"].as_str().unwrap(),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let messages: Vec<ChatMessage> = case["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| ChatMessage::new(m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
            .collect();
        let gen = case["add_generation_prompt"].as_bool().unwrap();
        let got = template.render(&messages, gen);
        match (case.get("text").and_then(|t| t.as_str()), got) {
            (Some(want), Ok(text)) if text == want => {}
            (None, Err(_)) => {}
            (want, got) => bad.push(format!(
                "{name} (gen {gen}, {} messages): want {want:?}, got {got:?}",
                messages.len()
            )),
        }
        n += 1;
    }
    assert!(n >= 40, "{n} cases");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn broken_templates_and_refusals_are_errors() {
    assert!(ChatTemplate::new("{% for m in messages %}", "", "").is_err());
    let strict = ChatTemplate::new(
        "{% if messages[0]['role'] != 'user' %}{{ raise_exception('users first') }}{% endif %}ok",
        "",
        "",
    )
    .unwrap();
    let e = strict
        .render(&[ChatMessage::new("assistant", "hi")], true)
        .unwrap_err();
    assert!(e.to_string().contains("users first"), "{e}");
    assert_eq!(
        strict
            .render(&[ChatMessage::new("user", "hi")], true)
            .unwrap(),
        "ok"
    );
}
