//! The MCPServer CRD (`mcps`).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use muster_core::resource::mcp_server::{McpServerDefinition, McpServerStatus};
use serde_json::{Value, json};

use super::schema::{Rule, node, require, rule, rule_at, set, structural_schema_of, validations};
use super::{CrdShape, age_column, build, with_observed_generation};

const HTTPS: &str = "^https://";

/// Cross-field rules of `spec`.
const SPEC_RULES: &[Rule] = &[
    rule_at(
        ".command",
        "self.type != 'stdio' || (has(self.command) && size(self.command) > 0)",
        "command is required for stdio type",
    ),
    rule_at(
        ".url",
        "self.type == 'stdio' || (has(self.url) && size(self.url) > 0)",
        "url is required for streamable-http and sse types",
    ),
    rule_at(
        ".args",
        "self.type == 'stdio' || !has(self.args) || size(self.args) == 0",
        "args is only for stdio servers",
    ),
    rule_at(
        ".env",
        "self.type == 'stdio' || !has(self.env) || size(self.env) == 0",
        "env is refused on a remote server: put credentials in a Secret referenced by headersFrom",
    ),
    rule_at(
        ".headers",
        "self.type != 'stdio' || !has(self.headers) || size(self.headers) == 0",
        "headers is only for streamable-http and sse servers",
    ),
    rule_at(
        ".headersFrom",
        "self.type != 'stdio' || !has(self.headersFrom) || size(self.headersFrom) == 0",
        "headersFrom is only for streamable-http and sse servers",
    ),
    rule_at(
        ".auth",
        "self.type != 'stdio' || !has(self.auth) || ((!has(self.auth.type) || self.auth.type == 'none') && !has(self.auth.tokenExchange) && !has(self.auth.authorizationServer) && !(has(self.auth.forwardToken) && self.auth.forwardToken))",
        "auth configuration is only supported for remote server types (streamable-http or sse)",
    ),
    rule_at(
        ".headers",
        "!has(self.headers) || self.headers.all(k, !k.matches('^(?i)(authorization|proxy-authorization|cookie|x-api-key)$') || self.headers[k].matches('^\\\\s*$'))",
        "must not carry a credential in Authorization, Proxy-Authorization, Cookie or X-API-Key: put it in a Secret referenced by headersFrom",
    ),
    rule_at(
        ".url",
        "!has(self.url) || !self.url.matches('^[^:/?#]+://[^/?#]*@')",
        "must not contain a user name or password: put credentials in a Secret referenced by headersFrom",
    ),
    rule_at(
        ".progress.maxDuration",
        "!has(self.progress) || !has(self.progress.maxDuration) || self.progress.maxDuration >= (has(self.timeout) ? self.timeout : 30)",
        "must be between timeout and 3600 seconds",
    ),
];

const AUTH_RULES: &[Rule] = &[
    rule_at(
        ".authorizationServer",
        "!has(self.authorizationServer) || (has(self.type) && self.type == 'oauth')",
        "authorizationServer requires type: oauth",
    ),
    rule_at(
        ".forwardToken",
        "!has(self.authorizationServer) || !has(self.forwardToken) || !self.forwardToken",
        "forwardToken is mutually exclusive with authorizationServer",
    ),
    rule_at(
        ".tokenExchange.enabled",
        "!has(self.authorizationServer) || !has(self.tokenExchange) || !has(self.tokenExchange.enabled) || !self.tokenExchange.enabled",
        "tokenExchange is mutually exclusive with authorizationServer",
    ),
    rule_at(
        ".forwardIdentity",
        "!has(self.forwardIdentity) || !self.forwardIdentity || (has(self.type) && self.type == 'oauth' && has(self.authorizationServer))",
        "forwardIdentity requires type: oauth and authorizationServer",
    ),
    rule_at(
        ".providerApps",
        "!has(self.providerApps) || size(self.providerApps) == 0 || (has(self.forwardToken) && self.forwardToken) || (has(self.forwardIdentity) && self.forwardIdentity)",
        "providerApps requires forwardToken or forwardIdentity",
    ),
];

const TOKEN_EXCHANGE_RULES: &[Rule] = &[rule(
    "!has(self.enabled) || !self.enabled || (has(self.dexTokenEndpoint) && size(self.dexTokenEndpoint) > 0 && has(self.connectorId) && size(self.connectorId) > 0)",
    "dexTokenEndpoint and connectorId are required when enabled",
)];

const AUTHORIZATION_SERVER_RULES: &[Rule] = &[
    rule_at(
        ".tokenEndpoint",
        "has(self.authorizationEndpoint) == has(self.tokenEndpoint)",
        "authorizationEndpoint and tokenEndpoint must be set together",
    ),
    rule_at(
        ".expectedIssuer",
        "!has(self.expectedIssuer) || (has(self.authorizationEndpoint) && has(self.tokenEndpoint))",
        "expectedIssuer needs authorizationEndpoint and tokenEndpoint",
    ),
];

/// The `spec` schema of MCPServer.
pub(crate) fn spec_schema() -> Value {
    let mut s = structural_schema_of::<McpServerDefinition>();
    require(&mut s, &[], &["type"]);
    set(
        &mut s,
        &["type"],
        "enum",
        json!(["stdio", "streamable-http", "sse"]),
    );
    let name_pattern = json!("^[a-zA-Z][a-zA-Z0-9_-]*$");
    set(&mut s, &["toolPrefix"], "pattern", name_pattern.clone());
    set(&mut s, &["toolPrefix"], "maxLength", json!(63));
    require(&mut s, &["family"], &["name", "instanceArg"]);
    set(&mut s, &["family", "name"], "pattern", name_pattern);
    set(&mut s, &["family", "name"], "maxLength", json!(63));
    set(
        &mut s,
        &["family", "instanceArg"],
        "pattern",
        json!("^[a-zA-Z][a-zA-Z0-9_]*$"),
    );
    set(&mut s, &["family", "instanceArg"], "maxLength", json!(63));
    set(&mut s, &["description"], "maxLength", json!(500));
    set(&mut s, &["url"], "maxLength", json!(2048));
    set(&mut s, &["headers"], "maxProperties", json!(32));
    set(&mut s, &["headers", "{}"], "maxLength", json!(8192));
    set(&mut s, &["env", "{}"], "maxLength", json!(32768));
    set(&mut s, &["headersFrom"], "maxItems", json!(32));
    require(&mut s, &["headersFrom", "[]"], &["name", "valueFrom"]);
    set(
        &mut s,
        &["headersFrom", "[]", "name"],
        "minLength",
        json!(1),
    );
    set(
        &mut s,
        &["headersFrom", "[]", "name"],
        "maxLength",
        json!(256),
    );
    require(
        &mut s,
        &["headersFrom", "[]", "valueFrom"],
        &["type", "name", "key"],
    );
    set(
        &mut s,
        &["headersFrom", "[]", "valueFrom", "type"],
        "enum",
        json!(["Secret"]),
    );
    set(
        &mut s,
        &["headersFrom", "[]", "valueFrom", "name"],
        "minLength",
        json!(1),
    );
    set(
        &mut s,
        &["headersFrom", "[]", "valueFrom", "key"],
        "minLength",
        json!(1),
    );
    validations(
        &mut s,
        &["headersFrom"],
        &[rule(
            "self.all(x, self.exists_one(y, y.name == x.name))",
            "header names must be unique in the list",
        )],
    );
    set(&mut s, &["timeout"], "minimum", json!(1));
    set(&mut s, &["timeout"], "maximum", json!(300));
    set(&mut s, &["progress", "maxDuration"], "minimum", json!(1));
    set(&mut s, &["progress", "maxDuration"], "maximum", json!(3600));
    set(
        &mut s,
        &["restartRequestedAt"],
        "format",
        json!("date-time"),
    );
    auth_constraints(node(&mut s, &["auth"]));
    validations(&mut s, &[], SPEC_RULES);
    s
}

fn auth_constraints(auth: &mut Value) {
    set(
        auth,
        &["requiredAudiences", "[]"],
        "pattern",
        json!("^\\S+$"),
    );
    let te = &["tokenExchange"];
    set(
        auth,
        &["tokenExchange", "dexTokenEndpoint"],
        "pattern",
        json!(HTTPS),
    );
    set(
        auth,
        &["tokenExchange", "expectedIssuer"],
        "pattern",
        json!(HTTPS),
    );
    validations(auth, te, TOKEN_EXCHANGE_RULES);
    require(
        auth,
        &["tokenExchange", "clientCredentialsSecretRef"],
        &["name"],
    );
    let asrv = &["authorizationServer"];
    require(auth, asrv, &["issuer"]);
    set(
        auth,
        &["authorizationServer", "issuer"],
        "pattern",
        json!("^https://[^?#]*[^/?#]$"),
    );
    for field in [
        "authorizationEndpoint",
        "tokenEndpoint",
        "expectedIssuer",
        "revocationEndpoint",
    ] {
        set(
            auth,
            &["authorizationServer", field],
            "pattern",
            json!(HTTPS),
        );
    }
    require(
        auth,
        &["authorizationServer", "clientCredentialsSecretRef"],
        &["name"],
    );
    validations(auth, asrv, AUTHORIZATION_SERVER_RULES);
    validations(auth, &[], AUTH_RULES);
}

/// The CRD of MCPServer: status subresource; columns Type, State, URL, AutoStart, Age.
pub fn mcp_server_crd() -> CustomResourceDefinition {
    build(CrdShape {
        kind: "MCPServer",
        plural: "mcpservers",
        singular: "mcpserver",
        short_names: &["mcps"],
        spec_description: "The MCP server muster connects to: its type, endpoint or command, tool naming and authentication.",
        spec: spec_schema(),
        status: Some(with_observed_generation(structural_schema_of::<
            McpServerStatus,
        >())),
        printer_columns: json!([
            { "name": "Type", "type": "string", "jsonPath": ".spec.type" },
            { "name": "State", "type": "string", "jsonPath": ".status.state" },
            { "name": "URL", "type": "string", "jsonPath": ".spec.url", "priority": 1 },
            { "name": "AutoStart", "type": "boolean", "jsonPath": ".spec.autoStart", "priority": 1 },
            age_column(),
        ]),
    })
}
