//! The YAML loader: any text given as `config.yaml`, an MCPServer file or a Workflow file is
//! decoded and validated, or refused with an error, never a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use muster_core::config::MusterConfig;
use muster_core::{McpServer, ValidationContext, Workflow};
use muster_fs::codec::from_yaml;
use muster_fs::document::{Expected, decode_document};
use muster_fs::store::FsKind;

fn load<K: FsKind>(text: &str) {
    let expected = Expected {
        kind: K::KIND,
        name: "fuzzed",
        namespace: "default",
    };
    if let Ok((document, _)) = decode_document::<K::Written, K::Status>(text, &expected) {
        let ctx = ValidationContext::filesystem();
        if let Ok(spec) = K::validate(document.spec, &document.metadata, &ctx) {
            // What is accepted can be written back and read again.
            let _ = K::to_written(&spec);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = from_yaml::<MusterConfig>(text);
    load::<McpServer>(text);
    load::<Workflow>(text);
});
