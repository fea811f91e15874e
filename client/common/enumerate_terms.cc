// Enumerate problems in either form; see enumerate_terms.h.
#include "client/common/enumerate_terms.h"

#include <cstdint>
#include <vector>

#include "client/common/reals.h"

namespace sampler::client {

void AddTerms(absl::Span<const PmfTerm> terms,
              absl::Span<const int64_t> repeats, bool packed,
              sampler::v1::Precision precision,
              sampler::v1::EnumerateProblem* problem) {
  for (int64_t k : repeats) problem->add_repeats(k);
  if (!packed) {
    for (const PmfTerm& term : terms) {
      sampler::v1::Pmf* pmf = problem->add_terms();
      pmf->set_offset(term.offset);
      SetReals(term.probabilities, precision, pmf->mutable_probabilities());
    }
    return;
  }
  std::vector<double> values;
  bool equal = true;
  bool offsets = false;
  for (const PmfTerm& term : terms) {
    values.insert(values.end(), term.probabilities.begin(),
                  term.probabilities.end());
    equal = equal && term.probabilities.size() == terms[0].probabilities.size();
    offsets = offsets || term.offset != 0;
  }
  SetReals(values, precision, problem->mutable_values());
  if (equal && !terms.empty()) {
    problem->set_term_length(
        static_cast<int64_t>(terms[0].probabilities.size()));
  } else {
    for (const PmfTerm& term : terms) {
      problem->add_lengths(static_cast<int64_t>(term.probabilities.size()));
    }
  }
  if (offsets) {
    for (const PmfTerm& term : terms) problem->add_offsets(term.offset);
  }
}

std::vector<TermShape> ProblemTerms(
    const sampler::v1::EnumerateProblem& problem) {
  std::vector<TermShape> shapes;
  if (problem.terms_size() > 0) {
    for (const sampler::v1::Pmf& term : problem.terms()) {
      shapes.push_back({RealsSize(term.probabilities()), 1});
    }
  } else if (problem.lengths_size() > 0) {
    for (int64_t length : problem.lengths()) shapes.push_back({length, 1});
  } else if (problem.term_length() > 0) {
    const int64_t count = RealsSize(problem.values()) / problem.term_length();
    shapes.assign(static_cast<size_t>(count), {problem.term_length(), 1});
  }
  if (static_cast<size_t>(problem.repeats_size()) == shapes.size()) {
    for (size_t t = 0; t < shapes.size(); ++t) {
      shapes[t].repeats = problem.repeats(static_cast<int>(t));
    }
  }
  return shapes;
}

int64_t TermCount(const sampler::v1::EnumerateProblem& problem) {
  int64_t count = 0;
  for (const TermShape& term : ProblemTerms(problem)) count += term.repeats;
  return count;
}

int64_t ResultLength(const sampler::v1::EnumerateProblem& problem) {
  const std::vector<TermShape> terms = ProblemTerms(problem);
  if (terms.empty()) return 0;
  int64_t length = 1;
  for (const TermShape& term : terms) {
    length += term.repeats * (term.length - 1);
  }
  return length;
}

}  // namespace sampler::client
