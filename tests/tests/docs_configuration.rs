//! `docs/reference/configuration.md` against the code: the `config.yaml` keys against the
//! schema `muster schema` writes, each documented default against the schema's, the status
//! of every ignored or refused key against what `muster serve` does with it, the environment
//! variables against the ones the sources read, and the flag table against `--help`.
//!
//! Run with `BLESS=1` to rewrite the generated flag table after a change to the command line.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use muster_tests::markdown::{code_spans, read_doc, rows, section};
use muster_tests::{muster_bin, workspace_root};
use serde_json::{Map, Value, json};
use tokio::time::Instant;

const PAGE: &str = "docs/reference/configuration.md";
const FLAGS_BEGIN: &str = "<!-- flags:begin -->\n";
const FLAGS_END: &str = "<!-- flags:end -->";

fn page() -> String {
    read_doc(PAGE).unwrap()
}

// ---------------------------------------------------------------------------------------
// config.yaml keys

/// One key of `config.yaml` as the schema describes it.
#[derive(Debug)]
struct SchemaKey {
    /// The property's schema, `$ref` resolved.
    schema: Value,
    /// The property's default, if the schema gives one.
    default: Option<Value>,
}

fn config_schema() -> Value {
    let out = tempfile::tempdir().unwrap();
    let status = Command::new(muster_bin().unwrap())
        .args(["schema", "--out"])
        .arg(out.path())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "muster schema failed");
    serde_json::from_str(&std::fs::read_to_string(out.path().join("config.schema.json")).unwrap())
        .unwrap()
}

fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    match node["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        Some(name) => &root["$defs"][name],
        None => node,
    }
}

/// Every leaf key of the schema, dotted (`aggregator.admin.port`).
fn schema_keys(root: &Value) -> BTreeMap<String, SchemaKey> {
    fn walk(root: &Value, node: &Value, prefix: &str, out: &mut BTreeMap<String, SchemaKey>) {
        let Some(props) = resolve(root, node)["properties"].as_object() else {
            return;
        };
        for (name, prop) in props {
            let key = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            let resolved = resolve(root, prop);
            if resolved["properties"].is_object() {
                walk(root, prop, &key, out);
            } else {
                out.insert(
                    key,
                    SchemaKey {
                        schema: resolved.clone(),
                        default: prop.get("default").cloned(),
                    },
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, "", &mut out);
    out
}

/// The rows of the key table: key -> (type, default, status).
fn documented_keys(page: &str) -> BTreeMap<String, Vec<String>> {
    let table = section(page, "config.yaml keys").expect("no `## config.yaml keys` section");
    rows(table)
        .into_iter()
        .filter_map(|row| {
            let key = code_spans(row.first()?).into_iter().next()?;
            Some((key, row))
        })
        .collect()
}

fn as_doc_default(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if s.is_empty() => Some("\"\"".to_owned()),
        Value::String(s) => Some(s.clone()),
        Value::Bool(_) | Value::Number(_) => Some(v.to_string()),
        Value::Array(a) if a.is_empty() => Some("[]".to_owned()),
        _ => None,
    }
}

#[test]
fn every_config_key_is_documented_with_its_default() {
    let schema = config_schema();
    let keys = schema_keys(&schema);
    let page = page();
    let documented = documented_keys(&page);
    let mut problems = Vec::new();
    for key in keys.keys().filter(|k| !documented.contains_key(*k)) {
        problems.push(format!(
            "config.yaml key `{key}` is in the schema (`muster schema`, config.schema.json) but \
             not in {PAGE} § config.yaml keys: add a row with its type, default, status and \
             meaning"
        ));
    }
    for key in documented.keys().filter(|k| !keys.contains_key(*k)) {
        problems.push(format!(
            "{PAGE} documents config.yaml key `{key}`, which the schema does not have: remove \
             the row or fix its name"
        ));
    }
    for (key, row) in &documented {
        let Some(schema_key) = keys.get(key) else {
            continue;
        };
        if row.len() != 5 {
            problems.push(format!(
                "{PAGE}: the row of `{key}` has {} cells, not 5 (key, type, default, status, \
                 meaning)",
                row.len()
            ));
            continue;
        }
        if let Some(want) = schema_key.default.as_ref().and_then(as_doc_default) {
            let have = code_spans(&row[2]).into_iter().next();
            if have.as_deref() != Some(want.as_str()) {
                problems.push(format!(
                    "{PAGE}: the default of `{key}` is `{want}` in the schema, the page says {}",
                    row[2]
                ));
            }
        }
        if !["works", "ignored", "refused"].contains(&row[3].as_str()) {
            problems.push(format!(
                "{PAGE}: the status of `{key}` is `{}`; use works, ignored or refused",
                row[3]
            ));
        }
        if row[4].is_empty() {
            problems.push(format!("{PAGE}: `{key}` has no meaning"));
        }
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

/// A value for `key` that differs from its default, to see what muster does with it.
fn probe_value(key: &str, k: &SchemaKey) -> Value {
    let variants: Vec<Value> = k.schema["oneOf"]
        .as_array()
        .map(|v| v.iter().map(|c| c["const"].clone()).collect())
        .or_else(|| k.schema["enum"].as_array().cloned())
        .unwrap_or_default();
    if let Some(v) = variants.into_iter().find(|v| Some(v) != k.default.as_ref()) {
        return v;
    }
    let ty = match &k.schema["type"] {
        Value::Array(types) => types.iter().find(|t| *t != "null").cloned(),
        t => Some(t.clone()),
    };
    match ty.as_ref().and_then(Value::as_str) {
        Some("boolean") => json!(!k.default.as_ref().and_then(Value::as_bool).unwrap_or(false)),
        Some("integer") => json!(k.default.as_ref().and_then(Value::as_u64).unwrap_or(0) + 1),
        Some("array") => json!(["probe.example.com"]),
        _ if key.ends_with("File") => json!("/nonexistent/muster-probe"),
        _ if key.ends_with("Url") => json!("https://muster.example.com"),
        _ => json!("probe"),
    }
}

fn nested(key: &str, value: Value) -> Value {
    key.rsplit('.').fold(value, |inner, part| {
        let mut m = Map::new();
        m.insert(part.to_owned(), inner);
        Value::Object(m)
    })
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

/// What `muster serve` does with one setting.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// It serves `/health`.
    Serves,
    /// It exits; its output.
    Refuses(String),
}

/// A config directory whose `config.yaml` is `settings` on a free loopback port.
fn config_dir(settings: Value) -> (tempfile::TempDir, u16) {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = json!({"aggregator": {"host": "127.0.0.1", "port": port}});
    merge(&mut config, settings);
    std::fs::write(dir.path().join("config.yaml"), config.to_string()).unwrap();
    (dir, port)
}

fn serve_with(key: &str, value: &Value) -> Outcome {
    let (dir, port) = config_dir(nested(key, value.clone()));
    let log = dir.path().join("serve.log");
    let out = std::fs::File::create(&log).unwrap();
    let mut child = Command::new(muster_bin().unwrap())
        .args(["serve", "--config-path"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let outcome = loop {
        if child.try_wait().unwrap().is_some() {
            break Outcome::Refuses(std::fs::read_to_string(&log).unwrap_or_default());
        }
        if http
            .get(format!("http://127.0.0.1:{port}/health"))
            .send()
            .is_ok_and(|r| r.status().is_success())
        {
            break Outcome::Serves;
        }
        assert!(
            Instant::now() < deadline,
            "muster serve with `{key}: {value}` neither served nor exited in 30 s:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = child.kill();
    let _ = child.wait();
    outcome
}

#[test]
fn ignored_and_refused_keys_behave_as_documented() {
    let schema = config_schema();
    let keys = schema_keys(&schema);
    let page = page();
    let probes: Vec<(String, String, Value)> = documented_keys(&page)
        .into_iter()
        .filter(|(_, row)| row.len() == 5 && (row[3] == "ignored" || row[3] == "refused"))
        .filter_map(|(key, row)| {
            let value = probe_value(&key, keys.get(&key)?);
            Some((key, row[3].clone(), value))
        })
        .collect();
    assert!(!probes.is_empty());
    let mut problems = Vec::new();
    // A few at a time: each is a muster process.
    for chunk in probes.chunks(4) {
        let outcomes: Vec<Outcome> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|(key, _, value)| s.spawn(move || serve_with(key, value)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for ((key, status, value), outcome) in chunk.iter().zip(outcomes) {
            let leaf = key.rsplit('.').next().unwrap_or(key);
            match (status.as_str(), outcome) {
                ("ignored", Outcome::Refuses(log)) => problems.push(format!(
                    "{PAGE} says `{key}` is ignored, but `muster serve` with `{key}: {value}` \
                     refuses to start; mark it refused (or works) and say what it does:\n{log}"
                )),
                ("refused", Outcome::Serves) => problems.push(format!(
                    "{PAGE} says `{key}` is refused, but `muster serve` with `{key}: {value}` \
                     starts; say what the key does"
                )),
                ("refused", Outcome::Refuses(log)) if !log.contains(leaf) => {
                    problems.push(format!(
                        "`muster serve` with `{key}: {value}` refuses to start without naming \
                         `{leaf}`:\n{log}"
                    ));
                }
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Environment variables

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Variables named by `env = "X"`, `var("X")`, `var_os("X")`, any `"MUSTER_*"` literal, and
/// the variables libraries read on muster's request (`RUST_LOG` for `EnvFilter`,
/// `KUBECONFIG` for kube's config inference), in the non-test code of every crate.
fn variables_read() -> BTreeMap<String, String> {
    let mut files = Vec::new();
    for krate in std::fs::read_dir(workspace_root().join("crates"))
        .unwrap()
        .flatten()
    {
        rust_files(&krate.path().join("src"), &mut files);
    }
    let mut found = BTreeMap::new();
    for file in files {
        // Unit-test files: `tests.rs` and everything under a `tests/` module directory (of
        // the crate's source: the checkout itself may live in a directory named `tests`).
        let relative = file.strip_prefix(workspace_root()).unwrap_or(&file);
        if relative.components().any(|c| c.as_os_str() == "tests")
            || file.file_name().is_some_and(|n| n == "tests.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        // Test modules close the files they are in.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let at = file
            .strip_prefix(workspace_root())
            .unwrap_or(&file)
            .display()
            .to_string();
        let mut add = |name: &str| {
            found.entry(name.to_owned()).or_insert_with(|| at.clone());
        };
        for marker in ["env = \"", "var(\"", "var_os(\"", "\"MUSTER_"] {
            for (i, _) in code.match_indices(marker) {
                let start = i + marker.len() - usize::from(marker == "\"MUSTER_") * 7;
                let name: String = code[start..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if !name.is_empty() && code[start + name.len()..].starts_with('"') {
                    add(&name);
                }
            }
        }
        if code.contains("from_env_lossy") || code.contains("EnvFilter::from_default_env") {
            add("RUST_LOG");
        }
        if code.contains("Config::infer") || code.contains("Kubeconfig::read") {
            add("KUBECONFIG");
        }
    }
    found
}

#[test]
fn every_environment_variable_is_documented() {
    let page = page();
    let table = section(&page, "Environment variables").expect("no Environment variables section");
    let mut documented = BTreeSet::new();
    let mut dependency = BTreeSet::new();
    for row in rows(table) {
        let names = code_spans(&row[0]);
        let by_dependency = row.get(1).is_some_and(|c| c.contains("dependency"));
        for name in names {
            if by_dependency {
                dependency.insert(name.clone());
            }
            documented.insert(name);
        }
    }
    let read = variables_read();
    let mut problems = Vec::new();
    for (name, file) in &read {
        if !documented.contains(name) {
            problems.push(format!(
                "environment variable `{name}` (read in {file}) is not in {PAGE} § Environment \
                 variables: add a row saying who reads it and what it does"
            ));
        }
    }
    for name in &documented {
        if !read.contains_key(name) && !dependency.contains(name) {
            problems.push(format!(
                "{PAGE} documents environment variable `{name}`, which no crate reads; remove \
                 it, or mark the row *dependency* if a library reads it"
            ));
        }
    }
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Flags

fn help(path: &[&str]) -> String {
    let out = Command::new(muster_bin().unwrap())
        .args(path)
        .arg("--help")
        .env("COLUMNS", "1000")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "muster {} --help failed",
        path.join(" ")
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The names of the `Commands:` section of a help text, `help` excluded.
fn subcommands(help: &str) -> Vec<String> {
    let Some((_, rest)) = help.split_once("\nCommands:\n") else {
        return Vec::new();
    };
    rest.lines()
        .take_while(|l| l.starts_with("  "))
        .filter(|l| l.len() > 2 && !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_owned)
        .collect()
}

/// One flag of one command.
#[derive(Debug)]
struct Flag {
    spec: String,
    value: String,
    default: String,
    env: String,
    meaning: String,
}

fn bracket(text: &str, key: &str) -> Option<String> {
    let start = text.find(&format!("[{key}: "))? + key.len() + 3;
    let end = text[start..].find(']')? + start;
    Some(text[start..end].trim_end_matches('=').to_owned())
}

/// The options of a help text, in order.
fn flags(help: &str) -> Vec<Flag> {
    let Some((_, options)) = help.split_once("\nOptions:\n") else {
        return Vec::new();
    };
    let mut entries: Vec<(String, Vec<String>)> = Vec::new();
    for line in options.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if trimmed.starts_with('-') && indent <= 6 {
            let (spec, rest) = match trimmed.find("  ") {
                Some(i) => (trimmed[..i].to_owned(), trimmed[i..].trim().to_owned()),
                None => (trimmed.to_owned(), String::new()),
            };
            entries.push((spec, vec![rest]));
        } else if let Some((_, lines)) = entries.last_mut() {
            lines.push(trimmed.to_owned());
        }
    }
    entries
        .into_iter()
        .map(|(spec, lines)| {
            let text = lines.join("\n");
            let (names, value) = match spec.find(" <").or_else(|| spec.find(" [")) {
                Some(i) => (spec[..i].to_owned(), spec[i..].trim().to_owned()),
                None => (spec.clone(), String::new()),
            };
            let mut values: Vec<String> = lines
                .iter()
                .filter_map(|l| l.strip_prefix("- "))
                .filter_map(|l| l.split(':').next())
                .map(str::to_owned)
                .collect();
            if values.is_empty()
                && let Some(v) = bracket(&text, "possible values")
            {
                values = v.split(", ").map(str::to_owned).collect();
            }
            let first = lines
                .iter()
                .find(|l| !l.is_empty())
                .cloned()
                .unwrap_or_default();
            let first = first
                .split(" [")
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned();
            let meaning = if values.is_empty() {
                first
            } else {
                format!("{first}: {}", values.join(", "))
            };
            Flag {
                spec: names,
                value,
                default: bracket(&text, "default").unwrap_or_default(),
                env: bracket(&text, "env").unwrap_or_default(),
                meaning,
            }
        })
        .collect()
}

fn code(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("`{}`", s.replace('|', "\\|"))
    }
}

/// The flag table: every command's flags, global ones under `muster` only.
fn flag_table() -> (String, BTreeSet<(String, String)>) {
    let mut commands: Vec<Vec<String>> = vec![Vec::new()];
    let mut i = 0;
    while i < commands.len() {
        let path = commands[i].clone();
        let refs: Vec<&str> = path.iter().map(String::as_str).collect();
        for sub in subcommands(&help(&refs)) {
            let mut p = path.clone();
            p.push(sub);
            commands.push(p);
        }
        i += 1;
    }
    let mut table = String::from(
        "| command | flag | value | default | env | meaning |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    let mut names = BTreeSet::new();
    for path in &commands {
        let refs: Vec<&str> = path.iter().map(String::as_str).collect();
        let command = std::iter::once("muster")
            .chain(refs.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        for flag in flags(&help(&refs)) {
            let global = flag.spec.contains("--debug") || flag.spec.contains("--help");
            if global && !path.is_empty() {
                continue;
            }
            names.insert((command.clone(), flag.spec.clone()));
            table.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                code(&command),
                code(&flag.spec),
                code(&flag.value),
                code(&flag.default),
                code(&flag.env),
                flag.meaning.replace('|', "\\|")
            ));
        }
    }
    (table, names)
}

#[test]
fn flag_table_lists_every_flag_of_every_command() {
    let page = page();
    let (table, actual) = flag_table();
    let begin = page.find(FLAGS_BEGIN).expect("no flags:begin marker") + FLAGS_BEGIN.len();
    let end = page.find(FLAGS_END).expect("no flags:end marker");
    if std::env::var_os("BLESS").is_some() {
        let updated = format!("{}{table}{}", &page[..begin], &page[end..]);
        std::fs::write(workspace_root().join(PAGE), updated).unwrap();
        return;
    }
    let documented: BTreeSet<(String, String)> = rows(&page[begin..end])
        .into_iter()
        .filter_map(|r| {
            let command = code_spans(r.first()?).into_iter().next()?;
            let flag = code_spans(r.get(1)?).into_iter().next()?;
            Some((command, flag))
        })
        .collect();
    let mut problems: Vec<String> = actual
        .difference(&documented)
        .map(|(c, f)| format!("`{c} {f}` is not in {PAGE} § Command-line flags"))
        .collect();
    problems.extend(
        documented
            .difference(&actual)
            .map(|(c, f)| format!("{PAGE} lists `{c} {f}`, which `{c} --help` does not have")),
    );
    assert!(
        problems.is_empty() && page[begin..end] == table,
        "\n{}\nthe flag table is out of date: rewrite it with \
         `BLESS=1 cargo test -p muster-tests --test docs_configuration`\n",
        problems.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// aggregator.allowedHosts, as the key table and the troubleshooting page describe it

/// The status `POST /mcp` answers for an `initialize` with this `Host` header.
fn initialize_status(port: u16, host: &str) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "docs", "version": "1"}}});
    reqwest::blocking::Client::new()
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .header("Host", host)
        .header("Accept", "application/json, text/event-stream")
        .json(&body)
        .timeout(Duration::from_secs(10))
        .send()
        .unwrap()
        .status()
        .as_u16()
}

fn serving(allowed: &[&str]) -> (std::process::Child, u16, tempfile::TempDir) {
    let (dir, port) = config_dir(json!({"aggregator": {"allowedHosts": allowed}}));
    let child = Command::new(muster_bin().unwrap())
        .args(["serve", "--config-path"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while reqwest::blocking::get(format!("http://127.0.0.1:{port}/health")).is_err() {
        assert!(Instant::now() < deadline, "muster serve did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    (child, port, dir)
}

#[test]
fn allowed_hosts_behave_as_documented() {
    let wrong = "update `aggregator.allowedHosts` in docs/reference/configuration.md and the \
                 403 entry of docs/troubleshooting.md";
    let (mut open, port, _dir) = serving(&[]);
    assert_eq!(
        initialize_status(port, "rebind.example.com"),
        403,
        "without allowedHosts only loopback names are accepted, the page says; {wrong}"
    );
    let _ = open.kill();
    let _ = open.wait();

    let (mut guarded, port, _dir) = serving(&["muster.example.com"]);
    assert_eq!(
        initialize_status(port, "muster.example.com"),
        200,
        "{wrong}"
    );
    assert_eq!(
        initialize_status(port, &format!("localhost:{port}")),
        200,
        "listed hosts add to the loopback names, the page says; {wrong}"
    );
    assert_eq!(
        initialize_status(port, "rebind.example.com"),
        403,
        "a host that is neither listed nor loopback is refused, the page says; {wrong}"
    );
    let _ = guarded.kill();
    let _ = guarded.wait();
}
