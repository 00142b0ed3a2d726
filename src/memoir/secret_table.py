# ruff: noqa: E501 (the plugins' patterns, whole)
"""What :mod:`memoir.secret_screen` needs of detect-secrets' plugins, copied from
detect-secrets 1.5.0 by ``python -m memoir.secret_plugins`` (generated, then
``ruff format``; do not edit: tests/secrets/test_secret_table.py compares it with the
installed plugins)."""

# each specific detector's regex, in GATED's order: (pattern, flags, its gate's clauses,
# whether the gate compares folded text)
SPECIFIC = (
    (
        "(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}",
        32,
        (("3T", "BIA", "CCA", "KIA", "SIA"),),
        False,
    ),
    (
        "aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[\\'\\\"]([0-9a-zA-Z/+]{40})[\\'\\\"]",
        34,
        (("aws",), ("key", "pass", "password", "pw", "pwd", "token")),
        True,
    ),
    ('(?:\\s|=|:|"|^)AKC[a-zA-Z0-9]{10,}(?:\\s|"|$)', 32, (("AKC",),), False),
    ('(?:\\s|=|:|"|^)AP[\\dABCDEF][a-zA-Z0-9]{8,}(?:\\s|"|$)', 32, (("AP",),), False),
    ("AccountKey=[a-zA-Z0-9+\\/=]{88}", 32, (("AccountKey=",),), False),
    (
        "://[^:/\\?\\#\\[\\]@!\\$\\&'\\(\\)\\*\\+,;=\\s]+:([^:/\\?\\#\\[\\]@!\\$\\&'\\(\\)\\*\\+,;=\\s]+)@",
        32,
        (("://",),),
        False,
    ),
    (
        "(?:(?<=\\W)|(?<=^))(?:\\[|)(?:\"|\\'|)(?:cloudant|cl|clou)(?:_|-|)(?:api|)(?:key|pwd|pw|password|pass|token)(?:\"|\\'|)(?:\\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:\"|\\'|)([0-9a-f]{64})(?:\"|\\'|)",
        34,
        (("cl",), ("key", "pass", "password", "pw", "pwd", "token")),
        True,
    ),
    (
        "(?:(?<=\\W)|(?<=^))(?:\\[|)(?:\"|\\'|)(?:cloudant|cl|clou)(?:_|-|)(?:api|)(?:key|pwd|pw|password|pass|token)(?:\"|\\'|)(?:\\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:\"|\\'|)([a-z]{24})(?:\"|\\'|)",
        34,
        (("cl",), ("key", "pass", "password", "pw", "pwd", "token")),
        True,
    ),
    (
        "(?:https?\\:\\/\\/)[\\w\\-]+\\:([0-9a-f]{64})\\@[\\w\\-]+\\.cloudant\\.com",
        34,
        ((".cloudant.com",), ("http",), ("://",)),
        True,
    ),
    (
        "(?:https?\\:\\/\\/)[\\w\\-]+\\:([a-z]{24})\\@[\\w\\-]+\\.cloudant\\.com",
        34,
        ((".cloudant.com",), ("http",), ("://",)),
        True,
    ),
    ("[MNO][a-zA-Z\\d_-]{23,25}\\.[a-zA-Z\\d_-]{6}\\.[a-zA-Z\\d_-]{27}", 32, (), False),
    ("(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}", 32, (("gh",),), False),
    (
        "(glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_\\-]{20,50}(?!\\w)",
        32,
        (("gl",), ("dt", "ft", "pat", "rt", "soat")),
        False,
    ),
    ("GR1348941[A-Za-z0-9_\\-]{20,50}(?!\\w)", 32, (("GR1348941",),), False),
    ("glcbt-([0-9a-fA-F]{2}_)?[A-Za-z0-9_\\-]{20,50}(?!\\w)", 32, (("glcbt-",),), False),
    ("glimt-[A-Za-z0-9_\\-]{25}(?!\\w)", 32, (("glimt-",),), False),
    ("glptt-[A-Za-z0-9_\\-]{40}(?!\\w)", 32, (("glptt-",),), False),
    ("glagent-[A-Za-z0-9_\\-]{50,1024}(?!\\w)", 32, (("glagent-",),), False),
    ("gloas-[A-Za-z0-9_\\-]{64}(?!\\w)", 32, (("gloas-",),), False),
    (
        "(?:(?<=\\W)|(?<=^))(?:\\[|)(?:\"|\\'|)(?:ibm(?:_|-|)cloud(?:_|-|)iam|cloud(?:_|-|)iam|ibm(?:_|-|)cloud|ibm(?:_|-|)iam|ibm|iam|cloud|)(?:_|-|)(?:api|)(?:_|-|)(?:key|pwd|password|pass|token)(?:\"|\\'|)(?:\\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:\"|\\'|)([a-zA-Z0-9_\\-]{44}(?![a-zA-Z0-9_\\-]))(?:\"|\\'|)",
        34,
        (("key", "pass", "password", "pwd", "token"),),
        True,
    ),
    (
        "(?:(?<=\\W)|(?<=^))(?:\\[|)(?:\"|\\'|)(?:(?:ibm)?[-_]?cos[-_]?(?:hmac)?|)(?:_|-|)(?:secret[-_]?(?:access)?[-_]?key)(?:\"|\\'|)(?:\\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:\"|\\'|)([a-f0-9]{48}(?![a-f0-9]))(?:\"|\\'|)",
        34,
        (("secret",), ("key",)),
        True,
    ),
    ("eyJ[A-Za-z0-9-_=]+\\.[A-Za-z0-9-_=]+\\.?[A-Za-z0-9-_.+/=]*?", 32, (("eyJ",),), False),
    ("[0-9a-z]{32}-us[0-9]{1,2}", 32, (("-us",),), False),
    (
        "\\/\\/.+\\/:_authToken=\\s*((npm_.+)|([A-Fa-f0-9-]{36})).*",
        32,
        (("/:_authToken=",), ("//",)),
        False,
    ),
    (
        "sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}",
        32,
        (("T3BlbkFJ",), ("sk-",)),
        False,
    ),
    ("BEGIN DSA PRIVATE KEY", 32, (("BEGIN DSA PRIVATE KEY",),), False),
    ("BEGIN EC PRIVATE KEY", 32, (("BEGIN EC PRIVATE KEY",),), False),
    ("BEGIN OPENSSH PRIVATE KEY", 32, (("BEGIN OPENSSH PRIVATE KEY",),), False),
    ("BEGIN PGP PRIVATE KEY BLOCK", 32, (("BEGIN PGP PRIVATE KEY BLOCK",),), False),
    ("BEGIN PRIVATE KEY", 32, (("BEGIN PRIVATE KEY",),), False),
    ("BEGIN RSA PRIVATE KEY", 32, (("BEGIN RSA PRIVATE KEY",),), False),
    ("BEGIN SSH2 ENCRYPTED PRIVATE KEY", 32, (("BEGIN SSH2 ENCRYPTED PRIVATE KEY",),), False),
    ("PuTTY-User-Key-File-2", 32, (("PuTTY-User-Key-File-2",),), False),
    ("pypi-AgEIcHlwaS5vcmc[A-Za-z0-9-_]{70,}", 32, (("pypi-AgEIcHlwaS5vcmc",),), False),
    (
        "pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9-_]{70,}",
        32,
        (("pypi-AgENdGVzdC5weXBpLm9yZw",),),
        False,
    ),
    ("SG\\.[a-zA-Z0-9_-]{22}\\.[a-zA-Z0-9_-]{43}", 32, (("SG.",),), False),
    ("xox(?:a|b|p|o|s|r)-(?:\\d+-)+[a-z0-9]+", 34, (("xox",),), True),
    (
        "https://hooks\\.slack\\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+",
        98,
        (("https://hooks.slack.com/services/t",), ("/b",)),
        True,
    ),
    (
        "(?:(?<=\\W)|(?<=^))(?:\\[|)(?:\"|\\'|)(?:softlayer|sl)(?:_|-|)(?:api|)(?:_|-|)(?:key|pwd|password|pass|token)(?:\"|\\'|)(?:\\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:\"|\\'|)([a-z0-9]{64})(?:\"|\\'|)",
        34,
        (("key", "pass", "password", "pwd", "token"),),
        True,
    ),
    (
        "(?:http|https)://api.softlayer.com/soap/(?:v3|v3.1)/([a-z0-9]{64})",
        34,
        (("com/soap/v3",), ("softlayer",), ("://api",), ("http",)),
        True,
    ),
    ("sq0csp-[0-9A-Za-z\\\\\\-_]{43}", 32, (("sq0csp-",),), False),
    ("(?:r|s)k_live_[0-9a-zA-Z]{24}", 32, (("k_live_",),), False),
    ("\\d{8,10}:[0-9A-Za-z_-]{35}", 32, (), False),
    ("AC[a-z0-9]{32}", 32, (("AC",),), False),
    ("SK[a-z0-9]{32}", 32, (("SK",),), False),
)

# the keyword patterns' gate: (clauses, folded)
KEYWORD_GATE = (
    (
        (
            "account",
            "api",
            "auth",
            "client",
            "contrase",
            "contrasena",
            "database",
            "key",
            "pass",
            "passwd",
            "password",
            "priv",
            "private",
            "pwd",
            "secret",
            "service",
        ),
    ),
    True,
)

# the denylist's words, one of which every keyword pattern holds
ANY_KEYWORD = (
    "api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contraseña|contrasena",
    34,
)

# the keyword patterns: (pattern, flags, the group holding the value)
KEYWORDS = (
    (
        "(api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contraseña|contrasena)\\w*([]\\'\"]{0,2})?:\\s*([\\'\"`]?)((?=[^\\v\\'\\\"]*)(?=\\w+)[^\\v\\'\\\"]*[^\\v,\\'\\\"`])(\\3)",
        34,
        4,
    ),
    (
        "([\\'\"`])((?=[^\\v\\'\\\"]*)(?=\\w+)[^\\v\\'\\\"]*[^\\v,\\'\\\"`])(\\1)\\s*[!=]{2,3}\\s*\\w*(api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contraseña|contrasena)\\w*",
        32,
        2,
    ),
    (
        "(api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contraseña|contrasena)\\w*([]\\'\"]{0,2})?\\s*(={1,3}|!==?)\\s*([\\'\"`]?)((?=[^\\v\\'\\\"]*)(?=\\w+)[^\\v\\'\\\"]*[^\\v,\\'\\\"`])(\\4)",
        34,
        5,
    ),
    (
        "(api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contraseña|contrasena)\\w*[^\\s]{0,50}?\\s*([\\'\"`])((?=[^\\v\\'\\\"]*)(?=\\w+)[^\\v\\'\\\"]*[^\\v,\\'\\\"`])(\\2);",
        34,
        3,
    ),
    (
        "(api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contraseña|contrasena)\\w*([]\\'\"]{0,2})?:(\\s*)([\\'\"`])((?=[^\\v\\'\\\"]*)(?=\\w+)[^\\v\\'\\\"]*[^\\v,\\'\\\"`])(\\4)",
        34,
        5,
    ),
    (
        "([\\'\"`])((?=[^\\v\\'\\\"]*)(?=\\w+)[^\\v\\'\\\"]*[^\\v,\\'\\\"`])(\\1)\\s*[!=]{2,3}\\s*\\w*(api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contraseña|contrasena)\\w*",
        32,
        2,
    ),
    (
        "(api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contraseña|contrasena)\\w*([]\\'\"]{0,2})?\\s*(={1,3}|!==?)\\s*([\\'\"`])((?=[^\\v\\'\\\"]*)(?=\\w+)[^\\v\\'\\\"]*[^\\v,\\'\\\"`])(\\4)",
        34,
        5,
    ),
    (
        "(api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contraseña|contrasena)\\w*[^\\s]{0,50}?\\s*([\\'\"`])((?=[^\\v\\'\\\"]*)(?=\\w+)[^\\v\\'\\\"]*[^\\v,\\'\\\"`])(\\2);",
        34,
        3,
    ),
    (
        "(api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|contraseña|contrasena)\\w*([]\\'\"]{0,2})?\\s*=>?\\s*([\\'\"`])((?=[^\\v\\'\\\"]*)(?=\\w+)[^\\v\\'\\\"]*[^\\v,\\'\\\"`])(\\3)",
        34,
        4,
    ),
)

# the entropy plugins: (pattern, flags, charset, the shortest value whose entropy may
# pass the limit)
ENTROPY = (
    (
        "([\\'\"])([abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\\+/\\\\\\-_=]+)(\\1)",
        32,
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/\\-_=",
        23,
    ),
    ("([\\'\"])([0123456789abcdefABCDEF]+)(\\1)", 32, "0123456789abcdefABCDEF", 8),
)
