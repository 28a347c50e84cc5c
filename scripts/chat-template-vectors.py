#!/usr/bin/env python3
"""Writes tests/reference/chat_templates.json: chat templates rendered by Python's jinja2 the
way Hugging Face's apply_chat_template renders them (ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, raise_exception), for tests/chat_templates.rs to compare
webtensor's minijinja rendering against.

    pip install jinja2 gguf && python3 scripts/chat-template-vectors.py

Templates: the `tokenizer.chat_template` of every vocab-only GGUF in models/vectors/ that has
one (scripts/fetch-test-vectors.sh), and Llama 3's (no vocab file here carries it; its text as
Meta ships it). Each is rendered over a few conversations, with and without the generation
prompt; a template that raises records the error instead of a text.
"""
import glob
import json
import os

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
from gguf import GGUFReader

LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim "
    "+ '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "  Why is the sky blue?  "}],
    [
        {"role": "user", "content": "Translate 'chat' to French."},
        {"role": "assistant", "content": "« chat » — c'est pareil. 🐈"},
        {"role": "user", "content": "And to Japanese?\nOne word."},
    ],
    [{"role": "assistant", "content": "I speak first."}],
]


def field_str(r, key):
    f = r.fields.get(key)
    if f is None:
        return None
    return bytes(f.parts[f.data[0]]).decode("utf-8")


def token_text(r, key):
    f = r.fields.get(key)
    if f is None:
        return ""
    tid = int(f.parts[f.data[0]][0])
    toks = r.fields["tokenizer.ggml.tokens"]
    return bytes(toks.parts[toks.data[tid]]).decode("utf-8")


def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    templates = {"llama3": (LLAMA3, "<|begin_of_text|>", "<|eot_id|>")}
    for path in sorted(glob.glob(os.path.join(root, "models/vectors/ggml-vocab-*.gguf"))):
        r = GGUFReader(path)
        src = field_str(r, "tokenizer.chat_template")
        if src is None:
            continue
        name = os.path.basename(path)[len("ggml-vocab-"):-len(".gguf")]
        templates[name] = (src, token_text(r, "tokenizer.ggml.bos_token_id"), token_text(r, "tokenizer.ggml.eos_token_id"))
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    cases = []
    for name, (src, bos, eos) in templates.items():
        t = env.from_string(src)
        for conv in CONVERSATIONS:
            for gen in (True, False):
                case = {"template": name, "messages": conv, "add_generation_prompt": gen}
                try:
                    case["text"] = t.render(messages=conv, add_generation_prompt=gen, bos_token=bos, eos_token=eos)
                except jinja2.exceptions.TemplateError as e:
                    case["error"] = str(e)
                cases.append(case)
    out = {
        "generator": f"jinja2 {jinja2.__version__}",
        "templates": {k: {"source": v[0], "bos": v[1], "eos": v[2]} for k, v in templates.items()},
        "cases": cases,
    }
    dst = os.path.join(root, "tests/reference/chat_templates.json")
    with open(dst, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"[chat-template-vectors] {len(templates)} templates, {len(cases)} cases -> {dst}")


if __name__ == "__main__":
    main()
