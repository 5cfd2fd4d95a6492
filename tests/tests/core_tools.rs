//! The `core_mcpserver_update`/`_delete`/`_validate`, `core_service_restart` and
//! `core_config_*` tools through `call_tool` on a real `muster serve` with a real
//! server-everything, with the result shapes and error texts of docs/reference/tools.md.

#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use muster_tests::{McpClient, MusterConfig, deps, eventually};
use serde_json::{Value, json};

/// A successful call's inner text.
fn ok(client: &McpClient, tool: &str, args: Value) -> String {
    client.call_ok(tool, args).unwrap()
}

/// A successful call's inner JSON.
fn ok_json(client: &McpClient, tool: &str, args: Value) -> Value {
    client.call_ok_json(tool, args).unwrap()
}

/// A failed call's inner text.
fn failed(client: &McpClient, tool: &str, args: Value) -> String {
    client.call_err(tool, args).unwrap()
}

/// Waits until `list_tools` has (`present`) or lacks every tool of `names`.
fn wait_for_tools(client: &McpClient, names: &[&str], present: bool) {
    let (present, absent) = if present {
        (names, &[][..])
    } else {
        (&[][..], names)
    };
    client
        .wait_for_tools(present, absent, Duration::from_secs(30))
        .unwrap();
}

/// muster's direct children (its stdio MCP servers), sorted.
fn server_pids(muster: &mut muster_tests::MusterInstance) -> Vec<i32> {
    let mut pids: Vec<i32> = muster.children().iter().map(|p| p.pid()).collect();
    pids.sort_unstable();
    pids
}

#[test]
fn mcpserver_definitions_are_validated_updated_restarted_and_deleted() {
    let everything = deps::server_everything().unwrap().display().to_string();
    let dir = MusterConfig::new().write().unwrap();
    let mut muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    let file = dir.path().join("mcpservers/ev.yaml");
    let definition = json!({
        "name": "ev", "type": "stdio", "command": everything, "args": ["stdio"], "autoStart": true,
    });

    // Validate: accepted, rejected with every violation, unknown arguments named; nothing
    // is written.
    assert_eq!(
        ok(&client, "core_mcpserver_validate", definition.clone()),
        "Validation successful for mcpserver ev"
    );
    let wrong_type = failed(
        &client,
        "core_mcpserver_validate",
        json!({"name": "ev", "type": "carrier-pigeon"}),
    );
    assert!(
        wrong_type.starts_with("Validation failed: ") && wrong_type.contains("type"),
        "{wrong_type}"
    );
    let no_command = failed(
        &client,
        "core_mcpserver_validate",
        json!({"name": "ev", "type": "stdio"}),
    );
    assert!(
        no_command.starts_with("Validation failed: ") && no_command.contains("command"),
        "{no_command}"
    );
    let unknown = failed(
        &client,
        "core_mcpserver_validate",
        json!({"name": "ev", "type": "stdio", "command": "x", "colour": "blue"}),
    );
    assert!(
        unknown.starts_with("unknown args: [colour]. Allowed args: ["),
        "{unknown}"
    );
    assert!(!file.exists(), "validate wrote {}", file.display());

    assert_eq!(
        ok(&client, "core_mcpserver_create", definition),
        "MCP server 'ev' created successfully"
    );
    wait_for_tools(&client, &["x_ev_echo"], true);

    // Update: given fields replace the stored ones; a new toolPrefix renames the tools.
    assert_eq!(
        ok(
            &client,
            "core_mcpserver_update",
            json!({"name": "ev", "description": "the reference server", "toolPrefix": "ref"})
        ),
        "MCP server 'ev' updated successfully"
    );
    let got = ok_json(&client, "core_mcpserver_get", json!({"name": "ev"}));
    assert_eq!(got["description"], "the reference server", "{got}");
    assert_eq!(got["toolPrefix"], "ref", "{got}");
    assert_eq!(got["args"], json!(["stdio"]), "kept: {got}");
    let on_disk = std::fs::read_to_string(&file).unwrap();
    assert!(on_disk.contains("the reference server"), "{on_disk}");
    wait_for_tools(&client, &["x_ref_echo"], true);
    wait_for_tools(&client, &["x_ev_echo"], false);
    assert_eq!(
        failed(
            &client,
            "core_mcpserver_update",
            json!({"name": "nope", "description": "x"})
        ),
        "Failed to update MCP server: MCP server nope not found"
    );
    let invalid = failed(
        &client,
        "core_mcpserver_update",
        json!({"name": "ev", "toolPrefix": "9 lives"}),
    );
    assert!(
        invalid.starts_with("Invalid MCP server definition: ") && invalid.contains("toolPrefix"),
        "{invalid}"
    );
    assert_eq!(
        ok_json(&client, "core_mcpserver_get", json!({"name": "ev"}))["toolPrefix"],
        "ref",
        "a refused update changes nothing"
    );

    // Restart: a new process, the tools answer again.
    let before = server_pids(&mut muster);
    assert_eq!(before.len(), 1, "one server process: {before:?}");
    assert_eq!(
        ok(&client, "core_service_restart", json!({"name": "ev"})),
        "Successfully restarted service 'ev'"
    );
    let after = eventually("a new server process", Duration::from_secs(30), || {
        let now = server_pids(&mut muster);
        (now.len() == 1 && now != before).then_some(now)
    })
    .unwrap();
    assert_ne!(before, after);
    wait_for_tools(&client, &["x_ref_echo"], true);
    assert_eq!(
        ok(&client, "x_ref_echo", json!({"message": "again"})),
        "Echo: again"
    );
    assert_eq!(
        failed(&client, "core_service_restart", json!({})),
        "name is required"
    );
    let unknown_service = failed(&client, "core_service_restart", json!({"name": "nope"}));
    assert!(
        unknown_service.starts_with("Failed to restart service: ")
            && unknown_service.contains("nope"),
        "{unknown_service}"
    );

    // Delete: the server stops, its tools and file go.
    assert_eq!(
        ok(&client, "core_mcpserver_delete", json!({"name": "ev"})),
        "MCP server 'ev' deleted successfully"
    );
    wait_for_tools(&client, &["x_ref_echo"], false);
    assert!(!file.exists(), "{} left behind", file.display());
    eventually(
        "the server process to stop",
        Duration::from_secs(30),
        || server_pids(&mut muster).is_empty().then_some(()),
    )
    .unwrap();
    assert_eq!(
        failed(&client, "core_mcpserver_delete", json!({"name": "ev"})),
        "Failed to delete MCP server: MCP server ev not found"
    );
    assert_eq!(
        failed(&client, "core_mcpserver_delete", json!({})),
        "name argument is required"
    );
}

#[test]
fn the_configuration_is_read_updated_saved_and_reloaded() {
    let dir = MusterConfig::new()
        .config_section("limits:\n  workflows:\n    maxDepth: 7")
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    let config_yaml = dir.path().join("config.yaml");
    let port = dir.port();

    let whole = ok_json(&client, "core_config_get", json!({}));
    assert_eq!(whole["aggregator"]["port"], port, "{whole}");
    assert_eq!(whole["aggregator"]["host"], "127.0.0.1", "{whole}");
    let aggregator = ok_json(&client, "core_config_get_aggregator", json!({}));
    assert_eq!(aggregator, whole["aggregator"]);

    // Update: the whole section is replaced and written; the listener stays where it is.
    assert_eq!(
        failed(&client, "core_config_update_aggregator", json!({})),
        "aggregator is required"
    );
    let bad = failed(
        &client,
        "core_config_update_aggregator",
        json!({"aggregator": {"port": "eighty"}}),
    );
    assert!(
        bad.starts_with("Failed to parse aggregator config: "),
        "{bad}"
    );
    assert_eq!(
        ok(
            &client,
            "core_config_update_aggregator",
            json!({"aggregator": {"host": "127.0.0.1", "port": port, "musterPrefix": "zz"}})
        ),
        "Successfully updated aggregator configuration"
    );
    assert_eq!(
        ok_json(&client, "core_config_get_aggregator", json!({}))["musterPrefix"],
        "zz"
    );
    let written = std::fs::read_to_string(&config_yaml).unwrap();
    assert!(
        written.contains("zz"),
        "config.yaml not written:\n{written}"
    );
    assert!(
        written.contains("maxDepth: 7"),
        "the other sections were lost:\n{written}"
    );
    let still = muster.client().unwrap();
    assert_eq!(
        ok_json(&still, "core_config_get_aggregator", json!({}))["port"],
        port
    );

    // Reload: config.yaml is read again only when asked; a broken one keeps the running
    // configuration.
    std::fs::write(
        &config_yaml,
        format!("aggregator:\n  host: 127.0.0.1\n  port: {port}\n  musterPrefix: yy\n"),
    )
    .unwrap();
    assert_eq!(
        ok_json(&client, "core_config_get_aggregator", json!({}))["musterPrefix"],
        "zz",
        "config.yaml is not watched"
    );
    assert_eq!(
        ok(&client, "core_config_reload", json!({})),
        "Configuration reloaded successfully"
    );
    assert_eq!(
        ok_json(&client, "core_config_get_aggregator", json!({}))["musterPrefix"],
        "yy"
    );
    std::fs::write(&config_yaml, "aggregator: [not, a, mapping\n").unwrap();
    let broken = failed(&client, "core_config_reload", json!({}));
    assert!(
        broken.starts_with("Tool execution failed: failed to reload configuration: "),
        "{broken}"
    );
    assert_eq!(
        ok_json(&client, "core_config_get_aggregator", json!({}))["musterPrefix"],
        "yy",
        "a broken config.yaml changes nothing"
    );

    // Save: the running configuration is written back.
    assert_eq!(
        ok(&client, "core_config_save", json!({})),
        "Configuration saved successfully"
    );
    let saved = std::fs::read_to_string(&config_yaml).unwrap();
    assert!(
        saved.contains("yy") && !saved.contains("not, a, mapping"),
        "{saved}"
    );
    assert_eq!(
        ok(&client, "core_config_reload", json!({})),
        "Configuration reloaded successfully",
        "the saved file loads"
    );
}

#[test]
fn core_config_get_leaves_secrets_out() {
    let dir = MusterConfig::new()
        .aggregator_setting(
            "oauth:\n    server:\n      dex:\n        clientSecret: hunter2-in-config",
        )
        .write()
        .unwrap();
    let muster = dir.start().unwrap();
    let client = muster.client().unwrap();
    for tool in ["core_config_get", "core_config_get_aggregator"] {
        let text = ok(&client, tool, json!({}));
        assert!(!text.contains("hunter2"), "{tool} shows the secret: {text}");
        assert!(text.contains("dex"), "{tool} lacks the section: {text}");
    }
}
