//! `sasl.jaas.config`: the one-entry JAAS configuration Java clients take, e.g.
//! `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cret";`
//!
//! Only the options of Kafka's own login modules are read (PLAIN and SCRAM: `username`,
//! `password`; OAUTHBEARER: the `unsecuredLogin*` options), so a Java properties file works
//! unchanged. Errors name the key and never quote the text, which holds the password.

use std::collections::BTreeMap;

use zeroize::Zeroizing;

/// Kafka's login modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoginModule {
    Plain,
    Scram,
    OAuthBearer,
}

impl LoginModule {
    fn from_class(class: &str) -> Option<Self> {
        match class {
            "org.apache.kafka.common.security.plain.PlainLoginModule" => Some(Self::Plain),
            "org.apache.kafka.common.security.scram.ScramLoginModule" => Some(Self::Scram),
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule" => {
                Some(Self::OAuthBearer)
            }
            _ => None,
        }
    }
}

/// A parsed entry: the module and its options (values zeroized on drop).
pub(crate) struct JaasEntry {
    pub(crate) module: LoginModule,
    pub(crate) options: BTreeMap<String, Zeroizing<String>>,
}

/// Parses the single entry Java's `JaasContext.loadClientContext` accepts. The error says what
/// is wrong without echoing any part of the value.
pub(crate) fn parse(text: &str) -> Result<JaasEntry, String> {
    let mut tokens = Tokens {
        chars: text.chars().peekable(),
    };
    let class = tokens.word()?.ok_or("expected a login module class name")?;
    let module = LoginModule::from_class(&class).ok_or_else(|| {
        "the login module must be one of Kafka's PlainLoginModule, ScramLoginModule or \
         OAuthBearerLoginModule (Java classes cannot be loaded)"
            .to_owned()
    })?;
    let flag = tokens
        .word()?
        .ok_or("expected a control flag after the login module")?;
    if !["required", "requisite", "sufficient", "optional"]
        .iter()
        .any(|f| f.eq_ignore_ascii_case(&flag))
    {
        return Err("the control flag must be required, requisite, sufficient or optional".into());
    }
    let mut options = BTreeMap::new();
    loop {
        tokens.skip_whitespace();
        match tokens.chars.peek() {
            Some(';') => {
                tokens.chars.next();
                break;
            }
            None => return Err("the entry must end with ';'".into()),
            Some(_) => {}
        }
        let name = tokens.word()?.ok_or("expected an option name")?;
        tokens.skip_whitespace();
        if tokens.chars.next() != Some('=') {
            return Err("expected '=' after an option name".into());
        }
        tokens.skip_whitespace();
        let value = match tokens.chars.peek() {
            Some('"') => tokens.quoted()?,
            _ => Zeroizing::new(tokens.word()?.ok_or("expected an option value")?),
        };
        options.insert(name, value);
    }
    tokens.skip_whitespace();
    if tokens.chars.peek().is_some() {
        return Err("exactly one login module entry is allowed".into());
    }
    Ok(JaasEntry { module, options })
}

struct Tokens<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

impl Tokens<'_> {
    fn skip_whitespace(&mut self) {
        while self.chars.peek().is_some_and(|c| c.is_whitespace()) {
            self.chars.next();
        }
    }

    /// An unquoted token: a class name, flag, option name or bare value.
    fn word(&mut self) -> Result<Option<String>, String> {
        self.skip_whitespace();
        let mut word = String::new();
        while let Some(&c) = self.chars.peek() {
            if c.is_whitespace() || c == '=' || c == ';' || c == '"' {
                break;
            }
            word.push(c);
            self.chars.next();
        }
        Ok((!word.is_empty()).then_some(word))
    }

    /// A double-quoted value with backslash escapes, as Java's `StreamTokenizer` reads it.
    fn quoted(&mut self) -> Result<Zeroizing<String>, String> {
        self.chars.next(); // the opening quote
        let mut value = Zeroizing::new(String::new());
        loop {
            match self.chars.next() {
                Some('"') => return Ok(value),
                Some('\\') => match self.chars.next() {
                    Some(c) => value.push(c),
                    None => return Err("unterminated quoted value".into()),
                },
                Some(c) => value.push(c),
                None => return Err("unterminated quoted value".into()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kafka_login_modules() {
        let entry = parse(
            r#"org.apache.kafka.common.security.scram.ScramLoginModule required
               username="alice" password="p\"w;d";"#,
        )
        .unwrap();
        assert_eq!(entry.module, LoginModule::Scram);
        assert_eq!(entry.options["username"].as_str(), "alice");
        assert_eq!(entry.options["password"].as_str(), "p\"w;d");
        let entry = parse(
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule Required \
             unsecuredLoginStringClaim_sub=bob ;",
        )
        .unwrap();
        assert_eq!(entry.module, LoginModule::OAuthBearer);
        assert_eq!(
            entry.options["unsecuredLoginStringClaim_sub"].as_str(),
            "bob"
        );
    }

    #[test]
    fn malformed_entries_are_refused_without_echo() {
        for bad in [
            "",
            "com.example.MyLoginModule required;",
            "org.apache.kafka.common.security.plain.PlainLoginModule maybe password=\"hunter2\";",
            "org.apache.kafka.common.security.plain.PlainLoginModule required password=\"hunter2\"",
            "org.apache.kafka.common.security.plain.PlainLoginModule required password=\"hunter2;",
            "org.apache.kafka.common.security.plain.PlainLoginModule required password hunter2;",
            "org.apache.kafka.common.security.plain.PlainLoginModule required; x required;",
        ] {
            let error = parse(bad)
                .err()
                .unwrap_or_else(|| panic!("accepted {bad:?}"));
            assert!(!error.contains("hunter2"), "{error}");
        }
    }
}
