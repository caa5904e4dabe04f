#ifndef SETTLE_COPENSSL_SHIM_H
#define SETTLE_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/pkcs7.h>

// XN_FLAG_ONELINE is a macro composed of other macros, which Swift does not import.
static inline unsigned long settle_XN_FLAG_ONELINE(void) { return XN_FLAG_ONELINE; }

#endif
