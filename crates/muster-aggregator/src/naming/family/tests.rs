use rmcp::model::{JsonObject, Tool};
use serde_json::{Value, json};

use super::*;

fn schema(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

fn tool(name: &str, description: &str, props: Value) -> Tool {
    Tool::new(
        name.to_owned(),
        description.to_owned(),
        schema(json!({"type": "object", "properties": props})),
    )
}

fn ns() -> Value {
    json!({"namespace": {"type": "string"}})
}

struct Server {
    name: &'static str,
    naming: BackendNaming,
    tools: Vec<Tool>,
}

fn member(name: &'static str, tools: Vec<Tool>) -> Server {
    Server {
        name,
        naming: BackendNaming::default().with_family("kubernetes", "management_cluster"),
        tools,
    }
}

fn plain(name: &'static str, tools: Vec<Tool>) -> Server {
    Server {
        name,
        naming: BackendNaming::default(),
        tools,
    }
}

fn plan_with(options: &NamingOptions, servers: &[Server]) -> Vec<PlannedTool> {
    let backends: Vec<BackendTools<'_>> = servers
        .iter()
        .map(|s| BackendTools {
            server: s.name,
            naming: &s.naming,
            tools: &s.tools,
        })
        .collect();
    plan_tools(options, &backends)
}

fn plan(servers: &[Server]) -> Vec<PlannedTool> {
    plan_with(&NamingOptions::default(), servers)
}

fn names(planned: &[PlannedTool]) -> Vec<String> {
    planned.iter().map(|p| p.tool.name.to_string()).collect()
}

fn find<'a>(planned: &'a [PlannedTool], name: &str) -> &'a PlannedTool {
    planned
        .iter()
        .find(|p| p.tool.name == name)
        .unwrap_or_else(|| panic!("{name} not planned"))
}

fn members(p: &PlannedTool) -> Vec<&str> {
    match &p.route {
        PlannedRoute::Family { members, .. } => members.iter().map(|m| m.server.as_str()).collect(),
        PlannedRoute::Server { .. } => panic!("not a family tool"),
    }
}

#[test]
fn single_instance_family_is_family_prefixed_with_required_instance_arg() {
    let planned = plan(&[member(
        "k8s-graveler",
        vec![tool("list_pods", "List pods", ns())],
    )]);
    assert_eq!(names(&planned), ["x_kubernetes_list_pods"]);
    let p = &planned[0];
    assert_eq!(
        p.tool.description.as_deref(),
        Some("List pods (available on servers: k8s-graveler)")
    );
    assert_eq!(
        Value::Object((*p.tool.input_schema).clone()),
        json!({"type": "object",
               "properties": {
                   "namespace": {"type": "string"},
                   "management_cluster": {
                       "type": "string",
                       "description": "Target instance to execute this tool on. Available: k8s-graveler",
                       "enum": ["k8s-graveler"]}},
               "required": ["management_cluster"]})
    );
    assert_eq!(
        p.route,
        PlannedRoute::Family {
            family: "kubernetes".into(),
            instance_arg: "management_cluster".into(),
            members: vec![FamilyMember {
                server: "k8s-graveler".into(),
                upstream: "list_pods".into()
            }],
        }
    );
}

#[test]
fn members_collapse_into_one_tool_listing_servers_sorted() {
    let planned = plan(&[
        member("k8s-graveler", vec![tool("list_pods", "List pods", ns())]),
        member("k8s-gazelle", vec![tool("list_pods", "List pods", ns())]),
    ]);
    assert_eq!(names(&planned), ["x_kubernetes_list_pods"]);
    assert_eq!(members(&planned[0]), ["k8s-gazelle", "k8s-graveler"]);
    assert_eq!(
        planned[0].tool.input_schema["properties"]["management_cluster"]["enum"],
        json!(["k8s-gazelle", "k8s-graveler"])
    );
}

#[test]
fn description_policies() {
    // (policy, description of k8s-b's delete_pod, expected names)
    let table: [(FamilyDescriptions, &str, Vec<&str>); 4] = [
        (
            FamilyDescriptions::Majority,
            "Delete pod (force, no grace period)",
            vec!["x_kubernetes_delete_pod", "x_kubernetes_list_pods"],
        ),
        (
            FamilyDescriptions::Majority,
            "Delete pod (idempotent)",
            vec!["x_kubernetes_delete_pod", "x_kubernetes_list_pods"],
        ),
        (
            FamilyDescriptions::MustMatch,
            "Delete pod (force, no grace period)",
            vec![
                "x_k8s-a_delete_pod",
                "x_k8s-b_delete_pod",
                "x_k8s-c_delete_pod",
                "x_kubernetes_list_pods",
            ],
        ),
        (
            FamilyDescriptions::MustMatch,
            "Delete pod (idempotent)",
            vec!["x_kubernetes_delete_pod", "x_kubernetes_list_pods"],
        ),
    ];
    let pod = json!({"namespace": {"type": "string"}, "name": {"type": "string"}});
    for (policy, b_description, expected) in table {
        let servers = [
            member(
                "k8s-a",
                vec![
                    tool("list_pods", "List pods in a namespace", ns()),
                    tool("delete_pod", "Delete pod (idempotent)", pod.clone()),
                ],
            ),
            member(
                "k8s-b",
                vec![
                    tool("list_pods", "List pods in a namespace", ns()),
                    tool("delete_pod", b_description, pod.clone()),
                ],
            ),
            member(
                "k8s-c",
                vec![
                    tool("list_pods", "List pods in a namespace", ns()),
                    tool("delete_pod", "Delete pod (idempotent)", pod.clone()),
                ],
            ),
        ];
        let options = NamingOptions::default().with_family_descriptions(policy);
        let planned = plan_with(&options, &servers);
        assert_eq!(names(&planned), expected, "{policy:?} {b_description}");
        if let Some(p) = planned
            .iter()
            .find(|p| p.tool.name == "x_kubernetes_delete_pod")
        {
            assert_eq!(
                p.tool.description.as_deref(),
                Some("Delete pod (idempotent) (available on servers: k8s-a, k8s-b, k8s-c)")
            );
            assert_eq!(members(p), ["k8s-a", "k8s-b", "k8s-c"]);
        }
    }
}

#[test]
fn majority_description_tie_goes_to_the_longest() {
    let planned = plan(&[
        member("a", vec![tool("t", "short", ns())]),
        member("b", vec![tool("t", "much longer text", ns())]),
    ]);
    assert_eq!(
        find(&planned, "x_kubernetes_t").tool.description.as_deref(),
        Some("much longer text (available on servers: a, b)")
    );
}

#[test]
fn schema_divergence_keeps_the_largest_group() {
    let wide = json!({"namespace": {"type": "string"}, "all": {"type": "boolean"}});
    let planned = plan(&[
        member("a", vec![tool("list_pods", "List pods", ns())]),
        member("b", vec![tool("list_pods", "List pods", wide.clone())]),
        member("c", vec![tool("list_pods", "List pods", wide)]),
    ]);
    assert_eq!(names(&planned), ["x_a_list_pods", "x_kubernetes_list_pods"]);
    assert_eq!(
        members(find(&planned, "x_kubernetes_list_pods")),
        ["b", "c"]
    );
    assert_eq!(
        planned[0].route,
        PlannedRoute::Server {
            server: "a".into(),
            upstream: "list_pods".into()
        }
    );
    // The fallback keeps its native schema (no instance argument).
    assert!(!has_property(
        &planned[0].tool.input_schema,
        "management_cluster"
    ));
}

#[test]
fn schema_tie_goes_to_the_group_with_the_first_server() {
    let other = json!({"node": {"type": "string"}});
    // Input order must not matter.
    let planned = plan(&[
        member("zeta", vec![tool("t", "T", other)]),
        member("alpha", vec![tool("t", "T", ns())]),
    ]);
    assert_eq!(names(&planned), ["x_zeta_t", "x_kubernetes_t"]);
    assert_eq!(members(find(&planned, "x_kubernetes_t")), ["alpha"]);
}

#[test]
fn wording_inside_the_schema_does_not_split_the_family() {
    let a = json!({"namespace": {"type": "string", "description": "The namespace"}});
    let b = json!({"namespace": {"type": "string", "description": "Namespace to list",
                                 "examples": ["default"]}});
    let planned = plan(&[
        member("a", vec![tool("list_pods", "List pods", a)]),
        member("b", vec![tool("list_pods", "List pods", b)]),
    ]);
    assert_eq!(names(&planned), ["x_kubernetes_list_pods"]);
}

#[test]
fn diverging_instance_args_make_the_whole_family_fall_back() {
    let servers = [
        member("k8s-graveler", vec![tool("list_pods", "List pods", ns())]),
        Server {
            name: "k8s-gazelle",
            naming: BackendNaming::default().with_family("kubernetes", "cluster"),
            tools: vec![tool("list_nodes", "List nodes", json!({}))],
        },
    ];
    assert_eq!(
        names(&plan(&servers)),
        ["x_k8s-gazelle_list_nodes", "x_k8s-graveler_list_pods"]
    );
}

#[test]
fn a_schema_already_using_the_instance_arg_falls_back() {
    let clash = json!({"management_cluster": {"type": "string"}});
    let planned = plan(&[
        member("a", vec![tool("t", "T", clash), tool("u", "U", ns())]),
        member("b", vec![tool("t", "T", ns()), tool("u", "U", ns())]),
    ]);
    assert_eq!(names(&planned), ["x_a_t", "x_b_t", "x_kubernetes_u"]);
}

#[test]
fn order_is_servers_then_families() {
    let planned = plan(&[
        plain("slack", vec![tool("send_message", "Send", json!({}))]),
        member(
            "k8s-b",
            vec![tool("z_tool", "Z", ns()), tool("a_tool", "A", ns())],
        ),
        plain(
            "alpha",
            vec![tool("b", "B", json!({})), tool("a", "A", json!({}))],
        ),
        Server {
            name: "db",
            naming: BackendNaming::default().with_family("databases", "db"),
            tools: vec![tool("query", "Q", json!({}))],
        },
    ]);
    assert_eq!(
        names(&planned),
        [
            "x_alpha_b",
            "x_alpha_a",
            "x_slack_send_message",
            "x_databases_query",
            "x_kubernetes_a_tool",
            "x_kubernetes_z_tool",
        ]
    );
}

#[test]
fn no_double_family_prefix_and_tool_prefix_on_fallbacks() {
    let planned = plan(&[
        member("a", vec![tool("kubernetes_version", "V", json!({}))]),
        Server {
            name: "b",
            naming: BackendNaming::default()
                .with_family("kubernetes", "management_cluster")
                .with_tool_prefix("bee"),
            tools: vec![tool(
                "kubernetes_version",
                "V",
                json!({"management_cluster": {"type": "string"}}),
            )],
        },
        member("c", vec![tool("kubernetes_ping", "P", json!({}))]),
    ]);
    assert_eq!(
        names(&planned),
        [
            "x_a_kubernetes_version",
            "x_bee_kubernetes_version",
            "x_kubernetes_ping",
        ]
    );
}

#[test]
fn taken_names_are_not_exposed_twice() {
    let planned = plan(&[
        plain(
            "a",
            vec![
                tool("b_c", "first", json!({})),
                tool("b_c", "dup", json!({})),
            ],
        ),
        plain("a_b", vec![tool("c", "second", json!({}))]),
    ]);
    assert_eq!(names(&planned), ["x_a_b_c"]);
    assert_eq!(planned[0].tool.description.as_deref(), Some("first"));
}

#[test]
fn existing_trailers_are_replaced_not_duplicated() {
    let planned = plan(&[
        member(
            "a",
            vec![tool("t", "Do it (available on servers: stale)", ns())],
        ),
        member("b", vec![tool("t", "Do it", ns())]),
    ]);
    assert_eq!(
        planned[0].tool.description.as_deref(),
        Some("Do it (available on servers: a, b)")
    );
}

#[test]
fn plain_servers_keep_everything_but_the_name() {
    let mut t = tool("status", "Git status", json!({"path": {"type": "string"}}));
    t.title = Some("Status".into());
    let planned = plan(&[plain("git", vec![t.clone()])]);
    let mut expected = t;
    expected.name = "x_git_status".into();
    assert_eq!(planned[0].tool, expected);
}
