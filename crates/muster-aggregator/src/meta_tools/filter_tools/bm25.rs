//! BM25F ranking of tools against a natural-language query (reference §1.4).
//!
//! Each candidate has two fields, its name (weight 3) and the first line of its description
//! (weight 1). Tokens are lowercase runs of letters and digits, also split at lower→upper
//! boundaries (`ListPods` → `list`, `pods`). The IDF is computed over the candidates, a term
//! counts towards document frequency when it occurs in either field, and the generic verbs
//! `list` and `get` weigh a quarter.

const K1: f64 = 1.5;
const B: f64 = 0.75;
const NAME_WEIGHT: f64 = 3.0;
const DESCRIPTION_WEIGHT: f64 = 1.0;
/// Terms too generic to tell tools apart, and their weight.
const GENERIC_TERMS: [&str; 2] = ["list", "get"];
const GENERIC_WEIGHT: f64 = 0.25;

/// One candidate, tokenized.
#[derive(Debug, Clone, Copy)]
pub(in crate::meta_tools) struct Doc<'a> {
    /// Tokens of the tool name.
    pub(in crate::meta_tools) name: &'a [String],
    /// Tokens of the first line of the description.
    pub(in crate::meta_tools) description: &'a [String],
}

/// `(index, score)` of every doc with a positive score, best first; ties keep doc order.
pub(in crate::meta_tools) fn rank(query: &str, docs: &[Doc<'_>]) -> Vec<(usize, f64)> {
    let mut terms: Vec<String> = Vec::new();
    for term in tokenize(query) {
        if !terms.contains(&term) {
            terms.push(term);
        }
    }
    if terms.is_empty() || docs.is_empty() {
        return Vec::new();
    }

    #[allow(clippy::cast_precision_loss)]
    let n = docs.len() as f64;
    #[allow(clippy::cast_precision_loss)]
    let avg_name = docs.iter().map(|d| d.name.len()).sum::<usize>() as f64 / n;
    #[allow(clippy::cast_precision_loss)]
    let avg_description = docs.iter().map(|d| d.description.len()).sum::<usize>() as f64 / n;

    // Term frequencies per doc and term: (in name, in description).
    let frequencies: Vec<Vec<(usize, usize)>> = docs
        .iter()
        .map(|d| {
            terms
                .iter()
                .map(|t| (count(d.name, t), count(d.description, t)))
                .collect()
        })
        .collect();
    let idf: Vec<f64> = (0..terms.len())
        .map(|j| {
            #[allow(clippy::cast_precision_loss)]
            let df = frequencies
                .iter()
                .filter(|tf| tf[j].0 > 0 || tf[j].1 > 0)
                .count() as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();

    let mut ranked: Vec<(usize, f64)> = Vec::new();
    for (i, (doc, tf)) in docs.iter().zip(&frequencies).enumerate() {
        let mut score = 0.0;
        for (j, term) in terms.iter().enumerate() {
            // Plain multiply-add, no fused rounding: scores equal the original's to the bit.
            #[allow(clippy::suboptimal_flops)]
            let wtf = NAME_WEIGHT * normalized_tf(tf[j].0, doc.name.len(), avg_name)
                + DESCRIPTION_WEIGHT
                    * normalized_tf(tf[j].1, doc.description.len(), avg_description);
            if wtf == 0.0 {
                continue;
            }
            let mut term_score = idf[j] * wtf * (K1 + 1.0) / (wtf + K1);
            if GENERIC_TERMS.contains(&term.as_str()) {
                term_score *= GENERIC_WEIGHT;
            }
            score += term_score;
        }
        if score > 0.0 {
            ranked.push((i, score));
        }
    }
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ranked
}

fn count(tokens: &[String], term: &str) -> usize {
    tokens.iter().filter(|t| *t == term).count()
}

/// `tf / (1 − b + b·len/avglen)`, or 0 when the term is absent or the field empty everywhere.
fn normalized_tf(count: usize, len: usize, avg: f64) -> f64 {
    if count == 0 || avg == 0.0 {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)]
    let (count, len) = (count as f64, len as f64);
    count / (1.0 - B + B * len / avg)
}

/// Lowercase runs of letters and digits, split at lower→upper case boundaries.
pub(in crate::meta_tools) fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut previous: Option<char> = None;
    for c in text.chars() {
        if c.is_alphabetic() {
            if c.is_uppercase() && previous.is_some_and(char::is_lowercase) && !current.is_empty() {
                tokens.push(std::mem::take(&mut current));
            }
            current.extend(c.to_lowercase());
        } else if c.is_numeric() {
            current.push(c);
        } else if !current.is_empty() {
            tokens.push(std::mem::take(&mut current));
        }
        previous = Some(c);
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

/// A score rounded to 4 decimals; a positive score never shows as 0.
pub(in crate::meta_tools) fn round_score(score: f64) -> f64 {
    let rounded = (score * 10_000.0).round() / 10_000.0;
    if rounded == 0.0 && score > 0.0 {
        0.0001
    } else {
        rounded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizes_words_snake_kebab_and_camel_case() {
        let table: [(&str, &[&str]); 6] = [
            (
                "x_rank_prometheus_query_range",
                &["x", "rank", "prometheus", "query", "range"],
            ),
            ("ListPods", &["list", "pods"]),
            ("getHTTPResponse", &["get", "httpresponse"]),
            ("k8s-graveler v2", &["k8s", "graveler", "v2"]),
            (
                "Query Prometheus metrics.",
                &["query", "prometheus", "metrics"],
            ),
            ("", &[]),
        ];
        for (text, expected) in table {
            assert_eq!(tokenize(text), expected, "{text}");
        }
    }

    /// Ranks `(name, description)` pairs.
    fn rank_texts(query: &str, texts: &[(&str, &str)]) -> Vec<(usize, f64)> {
        let tokens: Vec<(Vec<String>, Vec<String>)> = texts
            .iter()
            .map(|(n, d)| (tokenize(n), tokenize(d)))
            .collect();
        let docs: Vec<Doc<'_>> = tokens
            .iter()
            .map(|(name, description)| Doc { name, description })
            .collect();
        rank(query, &docs)
    }

    const CORPUS: [(&str, &str); 4] = [
        (
            "x_rank_prometheus_query_range",
            "Query Prometheus metrics over a time range.",
        ),
        ("x_rank_metrics_overview", "Show a metrics summary."),
        ("x_rank_service_restart", "Restart a running service."),
        (
            "x_rank_grafana_dashboard",
            "Fetch a Grafana monitoring dashboard.",
        ),
    ];

    #[test]
    fn ranks_the_strongest_match_first_and_drops_non_matches() {
        let ranked = rank_texts("prometheus metrics query", &CORPUS);
        let order: Vec<usize> = ranked.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, [0, 1]);
        assert!(ranked[0].1 > ranked[1].1);
        assert!(rank_texts("kubernetes", &CORPUS).is_empty());
        assert!(rank_texts("  ", &CORPUS).is_empty());
        assert!(rank_texts("query", &[]).is_empty());
    }

    #[test]
    fn scores_follow_the_formula() {
        // One doc, one term in the name only: idf = ln(1 + 0.5/1.5), ntf = 1 (len = avg),
        // wtf = 3, score = idf * 3 * 2.5 / 4.5.
        let ranked = rank_texts("alpha", &[("alpha", "")]);
        let idf = (1.0f64 + 0.5 / 1.5).ln();
        let expected = idf * 3.0 * 2.5 / 4.5;
        assert!((ranked[0].1 - expected).abs() < 1e-12);
        // Generic verbs weigh a quarter.
        let generic = rank_texts("list", &[("list", "")]);
        assert!((generic[0].1 - expected * 0.25).abs() < 1e-12);
    }

    #[test]
    fn ties_keep_catalogue_order_and_names_outweigh_descriptions() {
        let docs = [("b_tool", "pods"), ("a_pods", "other"), ("c_tool", "pods")];
        let order: Vec<usize> = rank_texts("pods", &docs).iter().map(|(i, _)| *i).collect();
        assert_eq!(order, [1, 0, 2]);
    }

    #[test]
    fn rounding() {
        let table = [
            (1.234_56, 1.2346),
            (0.000_04, 0.0001),
            (0.000_05, 0.0001),
            (2.0, 2.0),
            (0.0, 0.0),
        ];
        for (score, expected) in table {
            assert!((round_score(score) - expected).abs() < 1e-12, "{score}");
        }
    }
}
