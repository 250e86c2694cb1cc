//! What every request to `heapgraph serve` must show before it is answered: a `Host` that is
//! the loopback at our port (so that a page on another site, with its name rebound to
//! 127.0.0.1, is refused), and the session's token, from the URL or the cookie the first page
//! set. Every answer carries the headers that keep the page to its own origin.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The cookie that keeps the token after the first page.
pub(crate) const COOKIE: &str = "heapgraph_token";

/// Where the page may load from and talk to: itself, nowhere else.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// What the guard checks requests against.
pub(crate) struct Guard {
    /// The session's secret, 32 hex digits from the OS's random source.
    pub(crate) token: String,
    /// The port the server listens on, which `Host` must name.
    pub(crate) port: u16,
}

impl Guard {
    /// A guard with a fresh token.
    pub(crate) fn new(port: u16) -> anyhow::Result<Guard> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)
            .map_err(|error| anyhow::anyhow!("cannot draw a random token: {error}"))?;
        let token = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        Ok(Guard { token, port })
    }

    /// Whether `Host` names the loopback at our port: `127.0.0.1:PORT`, `localhost:PORT` or
    /// `[::1]:PORT`.
    fn host_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
        else {
            return false;
        };
        let port = self.port.to_string();
        ["127.0.0.1", "localhost", "[::1]"].iter().any(|name| {
            host.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix(':'))
                .is_some_and(|rest| rest == port)
        })
    }

    /// Whether `given` is the token, compared in time independent of where they differ.
    fn is_token(&self, given: &str) -> bool {
        let (given, token) = (given.as_bytes(), self.token.as_bytes());
        given.len() == token.len()
            && given
                .iter()
                .zip(token)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }
}

/// The token a request carries in its query (`?token=`).
fn query_token(request: &Request) -> Option<&str> {
    request
        .uri()
        .query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

/// The token a request carries in its cookie.
fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

/// The middleware: refuses what fails a check with 403, sets the cookie when the token came in
/// the URL, and adds the page's security headers to every answer.
pub(crate) async fn check(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let mut response = if !guard.host_allowed(request.headers()) {
        forbidden(
            "the Host header must be 127.0.0.1, localhost or [::1] with the server's port \
             (is this page open through another name?)",
        )
    } else if request.method() != Method::GET && request.method() != Method::HEAD {
        crate::serve::api::error(
            StatusCode::METHOD_NOT_ALLOWED,
            "heapgraph serve only answers GET",
        )
    } else {
        let from_query = query_token(&request).is_some_and(|token| guard.is_token(token));
        let from_cookie =
            cookie_token(request.headers()).is_some_and(|token| guard.is_token(token));
        if !(from_query || from_cookie) {
            forbidden(
                "this request has no valid token: open the URL that `heapgraph serve` printed, \
                 with its ?token=",
            )
        } else if from_query && request.uri().path() == "/" {
            // The first page: keep the token in a cookie and take it out of the address bar
            // (and so out of the history and of any link copied from it).
            let mut response = Response::builder()
                .status(StatusCode::SEE_OTHER)
                .header(header::LOCATION, "/")
                .body(Body::empty())
                .unwrap_or_default();
            set_cookie(&mut response, &guard.token);
            response
        } else {
            let mut response = next.run(request).await;
            if from_query {
                set_cookie(&mut response, &guard.token);
            }
            response
        }
    };
    let headers = response.headers_mut();
    // A page that carries inline code sets its own policy, which allows that code by hash and
    // nothing more (`recorded`); every other answer gets the page's.
    headers
        .entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    for (name, value) in [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn set_cookie(response: &mut Response, token: &str) {
    if let Ok(value) = HeaderValue::from_str(&format!(
        "{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
    )) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
}

fn forbidden(message: &str) -> Response {
    crate::serve::api::error(StatusCode::FORBIDDEN, message).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(host: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_str(host).expect("ascii"));
        headers
    }

    #[test]
    fn only_the_loopback_at_our_port_is_a_host() {
        let guard = Guard {
            token: "ab".into(),
            port: 8123,
        };
        for host in ["127.0.0.1:8123", "localhost:8123", "[::1]:8123"] {
            assert!(guard.host_allowed(&headers(host)), "{host}");
        }
        for host in [
            "127.0.0.1",
            "127.0.0.1:8124",
            "127.0.0.1:81234",
            "evil.example:8123",
            "localhost.evil.example:8123",
            "127.0.0.1.nip.io:8123",
            "0.0.0.0:8123",
        ] {
            assert!(!guard.host_allowed(&headers(host)), "{host}");
        }
        assert!(!guard.host_allowed(&HeaderMap::new()));
    }

    #[test]
    fn tokens_are_random_and_compared_whole() {
        let (one, two) = (
            Guard::new(1).expect("the OS has randomness"),
            Guard::new(1).expect("the OS has randomness"),
        );
        assert_eq!(one.token.len(), 32);
        assert_ne!(one.token, two.token);
        assert!(one.is_token(&one.token.clone()));
        assert!(!one.is_token(&two.token));
        assert!(!one.is_token(&one.token[..31]));
        assert!(!one.is_token(""));
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; heapgraph_token=xyz; b=2"),
        );
        assert_eq!(cookie_token(&headers), Some("xyz"));
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("heapgraph_tokenx=1"),
        );
        assert_eq!(cookie_token(&headers), None);
    }
}
