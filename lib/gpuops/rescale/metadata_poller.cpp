// The metadata poller: HTTP over libcurl's easy API, the AWS IMDSv2 token flow, dedupe and Azure acknowledgement.
#include "gpuops/rescale/metadata_poller.hpp"

#include <array>
#include <memory>
#include <thread>
#include <utility>

#include <curl/curl.h>
#include <fmt/format.h>

#include "gpuops/core/units.hpp"

namespace gpuops::rescale {
namespace {

constexpr std::string_view aws_token_path = "/latest/api/token";
/// Metadata answers are a few hundred bytes; a bigger one is not a metadata server.
constexpr std::size_t max_body_bytes = std::size_t{64} * 1024;

/// curl_global_init is not thread-safe in every libcurl build; a function-local static runs it exactly once.
void init_curl() {
    struct Global {
        Global() {
            if (const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK)
                throw UnavailableError(fmt::format("curl_global_init failed: {}", curl_easy_strerror(rc)));
        }
        ~Global() { curl_global_cleanup(); }
        Global(const Global&) = delete;
        Global& operator=(const Global&) = delete;
    };
    static const Global global;
}

struct EasyDeleter {
    void operator()(CURL* handle) const noexcept { curl_easy_cleanup(handle); }
};
struct SlistDeleter {
    void operator()(curl_slist* list) const noexcept { curl_slist_free_all(list); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;
using HeaderList = std::unique_ptr<curl_slist, SlistDeleter>;

template <typename Value>
void set_option(CURL* handle, CURLoption option, Value value) {
    if (const CURLcode rc = curl_easy_setopt(handle, option, value); rc != CURLE_OK)
        throw InternalError(
            fmt::format("curl_easy_setopt({}) failed: {}", static_cast<int>(option), curl_easy_strerror(rc)));
}

struct Body {
    std::string text;
    bool too_large = false;
};

std::size_t append_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto* body = static_cast<Body*>(user);
    const std::size_t bytes = size * count;
    if (body->text.size() + bytes > max_body_bytes) {
        body->too_large = true;
        return 0;  // anything but `bytes` makes curl fail with CURLE_WRITE_ERROR
    }
    body->text.append(data, bytes);
    return bytes;
}

struct Request {
    std::string method;  ///< "GET", "PUT" or "POST"
    std::string url;
    std::vector<std::string> headers;
    std::string body;
};

HeaderList make_headers(const std::vector<std::string>& headers) {
    HeaderList list;
    for (const auto& header : headers) {
        curl_slist* grown = curl_slist_append(list.get(), header.c_str());
        if (grown == nullptr) throw InternalError("curl_slist_append failed");
        (void)list.release();  // curl_slist_append returned the same list, now longer
        list.reset(grown);
    }
    return list;
}

void configure(CURL* handle, const Request& request, const curl_slist* headers, Body& body,
               std::chrono::milliseconds timeout) {
    set_option(handle, CURLOPT_URL, request.url.c_str());
    // Link-local metadata servers are never behind a proxy; an http_proxy from the environment would break them.
    set_option(handle, CURLOPT_PROXY, "");
    // Without NOSIGNAL, libcurl times DNS lookups out with SIGALRM, which is unsafe in a threaded program.
    set_option(handle, CURLOPT_NOSIGNAL, 1L);
    set_option(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
    set_option(handle, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout.count()));
    set_option(handle, CURLOPT_HTTPHEADER, headers);
    set_option(handle, CURLOPT_WRITEFUNCTION, append_body);
    set_option(handle, CURLOPT_WRITEDATA, static_cast<void*>(&body));
    if (request.method != "GET") {
        // POSTFIELDS sends the body with a Content-Length (also when empty); CUSTOMREQUEST renames POST to PUT.
        set_option(handle, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.body.size()));
        set_option(handle, CURLOPT_POSTFIELDS, request.body.c_str());
        if (request.method != "POST") set_option(handle, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
}

[[noreturn]] void throw_transfer_error(CURLcode rc, const Request& request, const char* detail,
                                       std::chrono::milliseconds timeout) {
    const std::string what = *detail != '\0' ? detail : curl_easy_strerror(rc);
    if (rc == CURLE_OPERATION_TIMEDOUT) {
        throw TimeoutError(fmt::format("metadata server {} did not answer {} within {}", quote(request.url),
                                       request.method, units::format_duration(timeout)));
    }
    throw UnavailableError(fmt::format("cannot {} {}: {}", request.method, quote(request.url), what));
}

HttpResponse perform(const Request& request, std::chrono::milliseconds timeout) {
    init_curl();
    const EasyHandle handle(curl_easy_init());
    if (!handle) throw InternalError("curl_easy_init failed");
    const HeaderList headers = make_headers(request.headers);
    Body body;
    std::array<char, CURL_ERROR_SIZE> detail{};
    set_option(handle.get(), CURLOPT_ERRORBUFFER, detail.data());
    configure(handle.get(), request, headers.get(), body, timeout);
    if (const CURLcode rc = curl_easy_perform(handle.get()); rc != CURLE_OK) {
        if (body.too_large) {
            throw DataError(
                fmt::format("metadata server {} sent more than {} bytes", quote(request.url), max_body_bytes));
        }
        throw_transfer_error(rc, request, detail.data(), timeout);
    }
    long status = 0;
    if (const CURLcode rc = curl_easy_getinfo(handle.get(), CURLINFO_RESPONSE_CODE, &status); rc != CURLE_OK)
        throw InternalError(fmt::format("curl_easy_getinfo failed: {}", curl_easy_strerror(rc)));
    return HttpResponse{status, std::move(body.text)};
}

/// The headers every provider demands; servers refuse requests without them (a guard against SSRF).
std::vector<std::string> provider_headers(Provider provider) {
    switch (provider) {
        case Provider::aws: return {};
        case Provider::gcp: return {"Metadata-Flavor: Google"};
        case Provider::azure: return {"Metadata: true"};
    }
    throw InternalError("unknown provider");
}

/// libcurl reads a zero timeout as "wait forever", and IMDS refuses token lifetimes outside 1 s to 6 h.
void validate(const PollerOptions& options) {
    if (options.request_timeout <= std::chrono::milliseconds::zero())
        throw UsageError("the metadata request timeout must be positive");
    if (options.interval < std::chrono::milliseconds::zero())
        throw UsageError("the metadata poll interval must not be negative");
    if (options.aws_token_ttl < std::chrono::seconds{1} || options.aws_token_ttl > std::chrono::hours{6})
        throw UsageError("the IMDSv2 token lifetime must be between 1s and 6h");
}

/// Runs `step`; a failure goes to `on_error` and gives false.
template <typename Step>
bool reported(const PollErrorHandler& on_error, Step&& step) {
    try {
        step();
        return true;
    } catch (const Error& e) {
        on_error(e);
    } catch (const std::exception& e) {
        on_error(InternalError(e.what()));
    }
    return false;
}

}  // namespace

std::string_view default_metadata_url(Provider provider) {
    return provider == Provider::gcp ? "http://metadata.google.internal" : "http://169.254.169.254";
}

MetadataPoller::MetadataPoller(PollerOptions options, PollerClock clock)
    : options_(std::move(options)), clock_(std::move(clock)) {
    validate(options_);
    if (options_.metadata_url.empty()) options_.metadata_url = default_metadata_url(options_.provider);
    while (options_.metadata_url.ends_with('/'))
        options_.metadata_url.pop_back();
    if (!clock_.sleep) clock_.sleep = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
    if (!clock_.now) clock_.now = [] { return std::chrono::system_clock::now(); };
}

std::string MetadataPoller::url(std::string_view path) const { return options_.metadata_url + std::string(path); }

HttpResponse MetadataPoller::get(std::string_view path, std::vector<std::string> headers) const {
    return perform(Request{"GET", url(path), std::move(headers), {}}, options_.request_timeout);
}

std::optional<std::string> MetadataPoller::aws_token() {
    if (imds_v1_) return std::nullopt;
    const UtcTime now = clock_.now();
    if (aws_token_ && now < aws_token_->refresh_at) return aws_token_->value;
    aws_token_.reset();
    const Request put{"PUT",
                      url(aws_token_path),
                      {fmt::format("X-aws-ec2-metadata-token-ttl-seconds: {}", options_.aws_token_ttl.count())},
                      {}};
    try {
        auto response = perform(put, options_.request_timeout);
        if (response.status == 200 && !response.body.empty()) {
            // Renew at half the lifetime, so a slow poll or a skewed clock never presents an expired token.
            aws_token_ = AwsToken{std::move(response.body), now + options_.aws_token_ttl / 2};
            return aws_token_->value;
        }
    } catch (const Error&) {
        // A PUT that times out is what IMDSv2 looks like from a container beyond the hop limit; IMDSv1 may work.
    }
    imds_v1_ = true;
    return std::nullopt;
}

HttpResponse MetadataPoller::get_aws_instance_action() {
    const auto token = aws_token();
    std::vector<std::string> headers;
    if (token) headers.push_back("X-aws-ec2-metadata-token: " + *token);
    return get(notice_path(Provider::aws), std::move(headers));
}

std::optional<SpotNotice> MetadataPoller::poll_once() {
    if (options_.provider != Provider::aws) {
        const auto response = get(notice_path(options_.provider), provider_headers(options_.provider));
        return parse_notice(options_.provider, response, NoticeContext{clock_.now(), options_.azure_vm_name});
    }
    auto response = get_aws_instance_action();
    if (response.status == 401) {
        // The token expired early, or this instance requires IMDSv2 after our fallback: one fresh token.
        aws_token_.reset();
        imds_v1_ = false;
        response = get_aws_instance_action();
    }
    return parse_aws_instance_action(response);
}

void MetadataPoller::acknowledge(const SpotNotice& notice) {
    if (notice.provider != Provider::azure) {
        throw UsageError(fmt::format("only Azure events are acknowledged, not {}", quote(to_string(notice.provider))));
    }
    json_io::Json body;
    body["StartRequests"] = json_io::Json::array({{{"EventId", notice.event_id}}});
    auto headers = provider_headers(Provider::azure);
    headers.emplace_back("Content-Type: application/json");
    const Request post{"POST", url(notice_path(Provider::azure)), std::move(headers), body.dump()};
    const auto response = perform(post, options_.request_timeout);
    if (response.status < 200 || response.status > 299) {
        throw UnavailableError(fmt::format("metadata server answered HTTP {} to the acknowledgement of event {}",
                                           response.status, quote(notice.event_id)));
    }
}

bool MetadataPoller::wants_acknowledgement(const SpotNotice& notice) const {
    return options_.azure_acknowledge && notice.provider == Provider::azure &&
           !acknowledged_.contains(notice.identity());
}

bool MetadataPoller::poll_and_dispatch(const NoticeHandler& on_notice, const PollErrorHandler& on_error) {
    std::optional<SpotNotice> notice;
    if (!reported(on_error, [&] { notice = poll_once(); }) || !notice) return false;
    const std::string identity = notice->identity();
    bool delivered = false;
    if (!delivered_.contains(identity)) {
        if (!reported(on_error, [&] { on_notice(*notice); })) return false;
        delivered_.insert(identity);
        delivered = true;
    }
    if (wants_acknowledgement(*notice)) {
        reported(on_error, [&] {
            acknowledge(*notice);
            acknowledged_.insert(identity);
        });
    }
    return delivered;
}

void MetadataPoller::run(const std::atomic<bool>& stop, const NoticeHandler& on_notice,
                         const PollErrorHandler& on_error) {
    while (!stop.load()) {
        poll_and_dispatch(on_notice, on_error);
        if (stop.load()) break;
        clock_.sleep(options_.interval);
    }
}

}  // namespace gpuops::rescale
