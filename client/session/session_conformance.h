#ifndef OVERSEER_CLIENT_SESSION_SESSION_CONFORMANCE_H_
#define OVERSEER_CLIENT_SESSION_SESSION_CONFORMANCE_H_

// The Session conformance suite: tests written only against the Session interface, run
// by every implementation. To run it against an implementation, link
// //client/session:session_conformance and //core/kernels:all_kernels into a cc_test and write
//
//   INSTANTIATE_TEST_SUITE_P(
//       Direct, SessionConformanceTest,
//       ::testing::Values(SessionConformanceParam{"Direct", [] { return ...; }}),
//       SessionConformanceParamName);

#include <functional>
#include <memory>
#include <string>

#include "client/session/session.h"
#include "gtest/gtest.h"

namespace overseer {

struct SessionConformanceParam {
  std::string name;  // Test-name suffix: letters, digits and '_' only.
  // A new session without a graph. Every session it makes shares variables and queues
  // (one ResourceMgr, or one cluster), as two trainers of one job do.
  std::function<std::unique_ptr<Session>()> new_session;
};

// For INSTANTIATE_TEST_SUITE_P's name generator.
std::string SessionConformanceParamName(
    const ::testing::TestParamInfo<SessionConformanceParam>& info);

class SessionConformanceTest : public ::testing::TestWithParam<SessionConformanceParam> {
 protected:
  std::unique_ptr<Session> MakeSession() { return GetParam().new_session(); }
};

}  // namespace overseer

#endif  // OVERSEER_CLIENT_SESSION_SESSION_CONFORMANCE_H_
