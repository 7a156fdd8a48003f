// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex.  Used to check an
// executable embedded in a converted SavedModel before it is loaded; the
// wheel exports no hash we could link against.
#ifndef TF_DISC_COMMON_SHA256_H_
#define TF_DISC_COMMON_SHA256_H_

#include <string>

namespace tf_disc {

std::string Sha256Hex(const std::string& data);

}  // namespace tf_disc

#endif  // TF_DISC_COMMON_SHA256_H_
